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
    guard let client = UploadingClient(storage: dir) else { return (0, 0) }
    defer { client.stop() }
    let (analytics, segment, stats, server) = (client.analytics, client.segment, client.stats, client.server)
    let properties: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]

    resetPeakRSS()
    let start = monotonicSeconds()
    for _ in 0..<n { analytics.track("Product Viewed", properties: properties) }
    let tracked = monotonicSeconds() - start
    client.waitUntilSettled(n, counting: true)
    let elapsed = monotonicSeconds() - start
    let peak = currentPeakRSSMiB()
    dumpThreads("upload")
    FileHandle.standardError.write(Data(String(
        format: "  (upload run: track() loop %.2f s, acknowledged after %.2f s; %d batches, %.1f MB on the wire; overflowed %d, failed %d)\n",
        tracked, elapsed, segment.uploadedBatches, Double(server.wireBytes) / 1e6, stats.overflowed, stats.failed).utf8))
    for e in client.errors.withLock({ $0 }) { FileHandle.standardError.write(Data("  upload run error: \(e)\n".utf8)) }
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
