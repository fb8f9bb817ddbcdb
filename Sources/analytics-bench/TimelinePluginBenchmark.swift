import AnalyticsCore
import Foundation

/// An in-process enrichment plugin doing what Tests/Fixtures/enrich.c does: keep the event, or
/// replace it with the same event plus `"enriched": true`.
final class SwiftEnrichment: Plugin {
    let type = PluginType.enrichment
    let replace: Bool
    init(replace: Bool) { self.replace = replace }
    func execute(_ event: Event) -> Event? {
        guard replace else { return event }
        var copy = event
        copy.payload["enriched"] = true
        return copy
    }
}

/// Builds Tests/Fixtures/enrich.c (keys Enricher; `-DREPLACE` when asked) into a new directory.
func buildEnrichmentLibrary(replace: Bool) -> String {
    let dir = NSTemporaryDirectory() + "analytics-bench-enrich-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let gcc = Process()
    gcc.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
    gcc.arguments = ["-std=c99", "-shared", "-fPIC", "-O2", "-I", "include"] + (replace ? ["-DREPLACE"] : [])
        + ["-o", "\(dir)/libenrich.so", "Tests/Fixtures/enrich.c"]
    try! gcc.run()
    gcc.waitUntilExit()
    benchCheck(gcc.terminationStatus == 0, "gcc failed building the enrichment plugin (run from the package root)")
    return dir
}

/// µs per `track()` through a client with one enrichment plugin and one in-process no-op
/// destination, until the destination received every event: the plugin loaded from a library
/// (`library`, a directory) or in-process (`swift`). Best of three rounds; `cpu`: the process's CPU
/// µs per event (every thread) in the best round.
/// `isolated`: the library runs in its own `analytics-plugin-runner` (process mode, by its key).
func timelinePluginBenchmark(library: String? = nil, swift: Plugin? = nil, isolated: Bool = false, events n: Int) -> (wall: Double, cpu: Double) {
    var best = Double.infinity, bestCPU = Double.infinity
    for _ in 0..<3 {
        let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = benchConfiguration(storage: dir, integrations: ["Dest0": [:]])
        config.destinationQueueCapacity = n + 1
        config.pluginsDirectory = library
        if isolated {
            config.isolation = IsolationConfiguration(byKey: ["Enricher": .process])
            config.isolation.scanCacheFile = ""
        }
        if let swift { config.plugins = [swift] }
        let analytics = Analytics(configuration: config)
        analytics.add(plugin: NoOpDestination(key: "Dest0"))
        benchCheck(analytics.timeline.plugins(of: .enrichment).count == 1, "the enrichment plugin is missing")
        let properties: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]
        let (elapsed, cpu) = timedTracks(analytics, events: n, warmUp: "Warm Up", event: "Product Viewed", properties: properties)
        benchCheck(analytics.timeline.stats(forKey: "Dest0")!.delivered == n + 1000)
        analytics.shutdown()
        if elapsed / Double(n) * 1e6 < best { best = elapsed / Double(n) * 1e6; bestCPU = cpu / Double(n) * 1e6 }
    }
    return (best, bestCPU)
}

/// ns for the plugin call alone on an event whose JSON text is already there (as when a loaded
/// destination or another loaded plugin needed it anyway): the KEEP path of a loaded C plugin vs
/// an in-process Swift plugin that returns the event. Best of three rounds of 2,000,000 calls.
func keepCallBenchmark(library: String) -> (nativeNs: Double, swiftNs: Double) {
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var config = Configuration(writeKey: "bench", storageDirectory: dir)
    config.defaultSettings = Settings(["integrations": [:]])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.pluginsDirectory = library
    let analytics = Analytics(configuration: config)
    defer { analytics.shutdown() }
    guard let native = analytics.timeline.plugins(of: .enrichment).first else { return (.nan, .nan) }
    let swift = opaquePlugin()
    var event = try! Event(payload: ["type": "track", "event": "Benchmark", "anonymousId": "a",
                                     "properties": ["n": 1, "s": "some text"]])
    event.shareEncoding()
    benchCheck(!event.serializedBytes.isEmpty)
    func best(_ plugin: Plugin) -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = monotonicSeconds()
            var kept = 0
            for _ in 0..<2_000_000 where plugin.execute(event) != nil { kept += 1 }
            benchCheck(kept == 2_000_000)
            best = min(best, (monotonicSeconds() - start) / 2_000_000 * 1e9)
        }
        return best
    }
    return (best(native), best(swift))
}

@inline(never) func opaquePlugin() -> Plugin { SwiftEnrichment(replace: false) }
