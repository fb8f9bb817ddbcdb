import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Glibc

/// Events per second from the first `track()` until the server has acknowledged every event, on a
/// client whose only destination is the built-in Segment.io destination (durable queue on disk,
/// gzip, HTTP to a loopback server on 127.0.0.1), and the peak resident memory during that run.
/// The memory figure is the process's high-water mark reset just before the run (Linux
/// `clear_refs`), so earlier benchmarks in the same process do not count.
func uploadBenchmark(events n: Int) -> (eventsPerSecond: Double, peakRSSMiB: Double) {
    let dir = NSTemporaryDirectory() + "analytics-bench-upload-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    guard let server = try? LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false)) else {
        FileHandle.standardError.write(Data("analytics-bench: cannot start the loopback server\n".utf8))
        return (0, 0)
    }
    defer { server.stop() }
    var config = Configuration(writeKey: "bench", storageDirectory: dir)
    config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "bench"]]])
    config.settingsLocation = .defaultsOnly
    config.trackApplicationLifecycleEvents = false
    config.application = ApplicationInfo(name: "bench", version: "1.0", build: "1")
    config.segment.apiHost = "\(server.baseURL)/v1"
    config.maxQueueBytes = 1 << 30  // the whole run may sit on disk if uploads lag: nothing dropped
    config.flushTimeout = 600
    // track() waits when the destination's queue is full instead of dropping: nothing is lost and
    // memory stays flat; the figure is the sustained rate.
    config.destinationOverflow = .wait(seconds: 60)
    let errors = Locked<[String]>([])
    config.errorHandler = { e in errors.withLock { if $0.count < 5 { $0.append(e.description) } } }
    let analytics = Analytics(configuration: config)
    defer { analytics.shutdown() }
    guard let segment = analytics.find(key: "Segment.io") as? SegmentDestination,
          let stats = analytics.timeline.stats(forKey: "Segment.io") else {
        FileHandle.standardError.write(Data("analytics-bench: no Segment.io destination\n".utf8))
        return (0, 0)
    }
    let properties: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]

    resetPeakRSS()
    let start = monotonicSeconds()
    for _ in 0..<n { analytics.track("Product Viewed", properties: properties) }
    let tracked = monotonicSeconds() - start
    let idle = NSCondition()
    while segment.uploadedEvents + stats.failed + stats.overflowed < n {
        idle.lock()
        _ = idle.wait(until: Date(timeIntervalSinceNow: 0.001))
        idle.unlock()
    }
    let elapsed = monotonicSeconds() - start
    let peak = currentPeakRSSMiB()
    dumpThreads("upload")
    FileHandle.standardError.write(Data(String(
        format: "  (upload run: track() loop %.2f s, acknowledged after %.2f s; %d batches, %.1f MB on the wire; overflowed %d, failed %d)\n",
        tracked, elapsed, segment.uploadedBatches, Double(server.wireBytes) / 1e6, stats.overflowed, stats.failed).utf8))
    for e in errors.withLock({ $0 }) { FileHandle.standardError.write(Data("  upload run error: \(e)\n".utf8)) }
    return (Double(segment.uploadedEvents) / elapsed, peak)
}

/// Resets the kernel's high-water mark of this process's resident memory (VmHWM).
func resetPeakRSS() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

/// VmHWM from /proc/self/status, in MiB (the rusage peak when /proc is unavailable).
func currentPeakRSSMiB() -> Double {
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
       let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
       let kib = Double(line.split(separator: " ").dropFirst().first ?? "") {
        return kib / 1024
    }
    return peakRSSMiB()
}
