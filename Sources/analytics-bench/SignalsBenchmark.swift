import AnalyticsCore
import AnalyticsTestSupport
import Foundation

/// Signals per second from `emit` (the app's thread) through processSignal (JavaScriptCore) with
/// the seed's two generators, on a mix of eight signals per product view: entering a screen
/// (→ a screen event), the product's network request and response, four other interactions
/// and taps, "Add To Cart" (→ a track event enriched from the response found in the buffer).
/// Also the process's peak resident memory during the run, and the counters that bound it.
func signalsBenchmark(pluginsDirectory: String, signals n: Int)
    -> (signalsPerSecond: Double, eventsMade: Int, peakRSSMiB: Double, shed: Int)
{
    let dir = NSTemporaryDirectory() + "analytics-bench-signals-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let bundle = dir + "/generators.js"
    try! SeedSignalGenerators.source.write(toFile: bundle, atomically: true, encoding: .utf8)
    var config = Configuration(writeKey: "bench", storageDirectory: dir + "/storage")
    config.defaultSettings = Settings(["integrations": ["Dest0": [:]]])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.destinationQueueCapacity = 100_000
    config.destinationOverflow = .wait(seconds: 60)
    config.flushTimeout = 600
    config.pluginsDirectory = pluginsDirectory
    config.pluginOptions["LivePlugins"] = ["fallbackBundle": .string(bundle)]
    var signalsConfig = SignalsConfiguration()
    signalsConfig.broadcasters = []
    signalsConfig.overflow = .wait(seconds: 60)  // measure throughput, shed nothing
    config.signals = signalsConfig
    let analytics = Analytics(configuration: config)
    let destination = CheckingDestination(key: "Dest0")
    analytics.add(plugin: destination)
    let signals = analytics.signals!

    let product: JSON = ["content": ["id": "42", "title": "Mug", "price": 19.99]]
    func emitCycle(_ i: Int) {
        signals.emit(NavigationSignal(action: .entering, screen: "Product \(i % 50)"))
        signals.emit(NetworkSignal(action: .request, url: "https://shop.example/api/product/42", method: "GET"))
        signals.emit(NetworkSignal(action: .response, url: "https://shop.example/api/product/42", statusCode: 200, data: product))
        signals.emit(InteractionSignal(component: "image", title: "Photo"))
        signals.emit(InteractionSignal(component: "stepper", title: "Quantity", data: ["value": 2]))
        signals.emit(LocalDataSignal(action: .updated, identifier: "cart"))
        signals.emit(InteractionSignal(component: "button", title: "Details"))
        signals.emit(InteractionSignal(component: "button", title: "Add To Cart"))
    }
    for i in 0..<250 { emitCycle(i) }  // warm up (JIT)
    _ = signals.flush(timeout: 600)
    analytics.flush()
    resetPeakRSS()
    let before = signals.stats
    let cycles = n / 8
    let start = monotonicSeconds()
    for i in 0..<cycles { emitCycle(i) }
    _ = signals.flush(timeout: 600)
    let elapsed = monotonicSeconds() - start
    analytics.flush()
    let peak = currentPeakRSSMiB()
    let after = signals.stats
    let processed = after.delivered - before.delivered
    benchCheck(processed == cycles * 8, "processSignal saw \(processed) of \(cycles * 8) signals")
    // Events the generators made are sent back: they run on the host's queue, possibly after the
    // flush above returned; wait (bounded) for the last of them.
    let expected = (cycles + 250) * 2
    let deadline = monotonicSeconds() + 30
    var made = analytics.timeline.stats(forKey: "Dest0")!.delivered
    while made < expected && monotonicSeconds() < deadline {
        analytics.flush()
        made = analytics.timeline.stats(forKey: "Dest0")!.delivered
    }
    benchCheck(made == expected, "the generators made \(made) events, expected \(expected)")
    analytics.shutdown()
    return (Double(cycles * 8) / elapsed, made, peak, after.shedQueueFull + after.shedBeforeReady)
}
