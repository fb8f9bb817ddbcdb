import AnalyticsCore
import Foundation

/// The seed's FixProductViewed, the JavaScript enrichment plugin the LivePlugins row measures.
let fixProductViewedBundle = """
    class FixProductViewed extends LivePlugin {
        track(event) {
            if (event.event == "Product Viewed") {
                event.properties.product_id = event.properties.product_did
                delete event.properties.product_did
            }
            return event
        }
    }
    analytics.add(new FixProductViewed(LivePluginType.enrichment, null))
    """

/// Builds libliveplugins.so with the Makefile's rule into a new directory; nil (with the reason)
/// where JavaScriptCore's development package is missing.
func buildLiveLibrary() -> (directory: String?, problem: String?) {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["pkg-config", "--exists", "javascriptcoregtk-4.1"]
    guard (try? probe.run()) != nil else { return (nil, "pkg-config not found") }
    probe.waitUntilExit()
    guard probe.terminationStatus == 0 else {
        return (nil, "JavaScriptCore missing (Debian package libjavascriptcoregtk-4.1-dev)")
    }
    let dir = NSTemporaryDirectory() + "analytics-bench-live-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let make = Process()
    make.executableURL = URL(fileURLWithPath: "/usr/bin/make")
    make.arguments = ["-s", "PLUGINS_DIR=\(dir)", "\(dir)/libliveplugins.so"]
    try! make.run()
    make.waitUntilExit()
    guard make.terminationStatus == 0 else { return (nil, "make could not build libliveplugins.so") }
    return (dir, nil)
}

/// Events per second through the whole pipeline (one no-op destination, context enrichment) with
/// LivePlugins running FixProductViewed as an enrichment plugin on every "Product Viewed" event;
/// checks that the plugin really rewrote the events.
/// `cpuMicrosecondsPerEvent`: CPU time of the whole process (every thread) over the same span.
func liveTimelineBenchmark(pluginsDirectory: String, events n: Int)
    -> (eventsPerSecond: Double, microsecondsPerEvent: Double, cpuMicrosecondsPerEvent: Double)
{
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let bundle = dir + "/bundle.js"
    try! fixProductViewedBundle.write(toFile: bundle, atomically: true, encoding: .utf8)
    var config = benchConfiguration(storage: dir + "/storage", integrations: ["Dest0": [:]])
    config.destinationQueueCapacity = n + 1
    config.pluginsDirectory = pluginsDirectory
    config.pluginOptions["LivePlugins"] = ["fallbackBundle": .string(bundle)]
    let analytics = Analytics(configuration: config)
    let destination = CheckingDestination(key: "Dest0")
    analytics.add(plugin: destination)
    let properties: JSONObject = ["product_did": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]
    let (elapsed, cpu) = timedTracks(analytics, events: n, warmUp: "Product Viewed", event: "Product Viewed", properties: properties)
    let delivered = analytics.timeline.stats(forKey: "Dest0")!.delivered
    benchCheck(delivered == n + 1000, "Dest0 got \(delivered) of \(n + 1000)")
    benchCheck(destination.rewritten.withLock { $0 } == n + 1000, "FixProductViewed did not run on every event")
    analytics.shutdown()
    return (Double(n) / elapsed, elapsed / Double(n) * 1e6, cpu / Double(n) * 1e6)
}

/// Counts the events whose product_did became product_id.
final class CheckingDestination: DestinationPlugin {
    let key: String
    let timeline = Timeline()
    let rewritten = Locked(0)
    init(key: String) { self.key = key }
    func execute(_ event: Event) -> Event? {
        if event.properties["product_id"] != nil && event.properties["product_did"] == nil { rewritten.withLock { $0 += 1 } }
        return event
    }
}
