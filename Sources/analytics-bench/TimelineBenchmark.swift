import AnalyticsCore
import Foundation

/// A destination that does nothing, to measure the pipeline itself.
final class NoOpDestination: DestinationPlugin {
    let key: String
    let timeline = Timeline()
    init(key: String) { self.key = key }
    func execute(_ event: Event) -> Event? { event }
}

/// Events per second from `track()` until every destination has received every event, with K
/// no-op destinations and context enrichment on: in-process Swift ones, or, with
/// `loadedFrom`, the K integration libraries found there (keys Dest0…).
/// With `identifyEvery`, every that-many-th call is an identify (new userId and a trait) instead.
func timelineBenchmark(destinations k: Int, events n: Int, loadedFrom pluginsDirectory: String? = nil,
                       identifyEvery: Int? = nil) -> (eventsPerSecond: Double, microsecondsPerEvent: Double) {
    let r = timelineBenchmarkWithCPU(destinations: k, events: n, loadedFrom: pluginsDirectory, identifyEvery: identifyEvery)
    return (r.eventsPerSecond, r.microsecondsPerEvent)
}

/// The same, with the process's CPU time per event (every thread) over the same span.
func timelineBenchmarkWithCPU(destinations k: Int, events n: Int, loadedFrom pluginsDirectory: String? = nil,
                              identifyEvery: Int? = nil)
    -> (eventsPerSecond: Double, microsecondsPerEvent: Double, cpuMicrosecondsPerEvent: Double)
{
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let keys = (0..<k).map { "Dest\($0)" }
    var integrations: JSONObject = [:]
    for key in keys { integrations[key] = [:] }
    var config = Configuration(writeKey: "bench", storageDirectory: dir)
    config.defaultSettings = Settings(["integrations": .object(integrations)])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.application = ApplicationInfo(name: "bench", version: "1.0", build: "1")
    config.destinationQueueCapacity = n + 1
    config.flushTimeout = 600
    config.pluginsDirectory = pluginsDirectory
    let analytics = Analytics(configuration: config)
    if pluginsDirectory == nil { for key in keys { analytics.add(plugin: NoOpDestination(key: key)) } }
    let properties: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]
    for _ in 0..<1000 { analytics.track("Warm Up", properties: properties) }
    analytics.flush()
    let start = monotonicSeconds()
    let cpuStart = processCPUSeconds()
    if let every = identifyEvery {
        for i in 0..<n {
            if i % every == 0 { analytics.identify(userId: "user-\(i)", traits: ["plan": "pro", "seen": .number(Double(i))]) }
            else { analytics.track("Product Viewed", properties: properties) }
        }
    } else {
        for _ in 0..<n { analytics.track("Product Viewed", properties: properties) }
    }
    analytics.flush()
    let elapsed = monotonicSeconds() - start
    let cpu = processCPUSeconds() - cpuStart
    dumpThreads("timeline K=\(k)")
    for key in keys {
        let delivered = analytics.timeline.stats(forKey: key)!.delivered
        benchCheck(delivered == n + 1000, "\(key) got \(delivered) of \(n + 1000)")
    }
    analytics.shutdown()
    return (Double(n) / elapsed, elapsed / Double(n) * 1e6, cpu / Double(n) * 1e6)
}
