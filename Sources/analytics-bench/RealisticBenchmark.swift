import AnalyticsCore
import AnalyticsTestSupport
import Foundation

/// The realistic row: a client with ten loaded no-op C integrations (keys Dest0…Dest9) plus the
/// Segment.io destination uploading to a loopback server, routing rules on (a rule per three
/// destinations and a global one), and a call mix of 70 % track / 20 % identify / 10 % screen —
/// or, with `trackOnly`, track alone. Events per second from the first call until the server has
/// acknowledged the last event (every call's event is on disk when the call returns), and the
/// peak resident memory of the run.
func realisticBenchmark(events n: Int, libraries: String, trackOnly: Bool) -> (eventsPerSecond: Double, peakRSSMiB: Double) {
    let dir = NSTemporaryDirectory() + "analytics-bench-realistic-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var integrations: JSONObject = ["Segment.io": ["apiKey": "bench"]]
    for i in 0..<10 { integrations["Dest\(i)"] = [:] }
    let fql: (String) -> JSON = { ir in ["type": "fql", "ir": .string(ir)] }
    var rules: [JSON] = []
    for i in stride(from: 0, to: 10, by: 3) {
        rules.append(["destinationName": .string("Dest\(i)"), "matchers": [fql(#"["match","event",{"value":"Order *"}]"#)],
                      "transformers": [[["type": "drop_properties", "config": ["drop": ["properties": ["coupon"]]]]]]])
    }
    rules.append(["matchers": [fql(#"["=","properties.env",{"value":"test"}]"#)], "transformers": [[["type": "drop"]]]])
    guard let client = UploadingClient(storage: dir, configure: { config in
        config.defaultSettings = Settings(["integrations": .object(integrations), "middlewareSettings": ["routingRules": .array(rules)]])
        config.pluginsDirectory = libraries
    }) else { return (0, 0) }
    defer { client.stop() }
    let (analytics, segment, stats) = (client.analytics, client.segment, client.stats)
    let order: JSONObject = ["order_id": "o-1", "total": 42.5, "currency": "EUR", "coupon": "SPRING", "env": "prod"]
    let viewed: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]
    let traits: JSONObject = ["plan": "pro", "seats": 5]
    let screen: JSONObject = ["section": "catalog"]

    resetPeakRSS()
    let start = monotonicSeconds()
    for i in 0..<n {
        let slot = trackOnly ? 0 : i % 10
        switch slot {
        case 0..<7: analytics.track(i & 1 == 0 ? "Order Completed" : "Product Viewed", properties: i & 1 == 0 ? order : viewed)
        case 7, 8: analytics.identify(userId: "user-\(i % 1000)", traits: traits)
        default: analytics.screen("Catalog", properties: screen)
        }
    }
    let called = monotonicSeconds() - start
    analytics.flush()  // the last few events (under flushAt) go now, not at the flush interval
    client.waitUntilSettled(n)
    let elapsed = monotonicSeconds() - start
    let peak = currentPeakRSSMiB()
    dumpThreads(trackOnly ? "realistic, track only" : "realistic")
    let delivered = (0..<10).map { analytics.timeline.stats(forKey: "Dest\($0)")?.received ?? 0 }
    FileHandle.standardError.write(Data(String(
        format: "  (realistic run%@: calls %.2f s, acknowledged after %.2f s; %d batches; failed %d; Dest0 received %d)\n",
        trackOnly ? ", track only" : "", called, elapsed, segment.uploadedBatches, stats.failed, delivered[0]).utf8))
    for e in client.errors.withLock({ $0 }) { FileHandle.standardError.write(Data("  realistic run error: \(e)\n".utf8)) }
    return (Double(segment.uploadedEvents) / elapsed, peak)
}
