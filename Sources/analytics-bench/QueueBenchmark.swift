import AnalyticsCore
import Foundation
import Glibc

/// The durable queue alone: `n` events of about 400 bytes appended (each one checksummed or MACed
/// into the mapped segment), then read back by a new opener (so every record is checked) and
/// acknowledged in batches of 500. Best of five, in wall time and in the thread's CPU time (which
/// other processes on a shared machine disturb less).
func queueBenchmark(events n: Int) -> (appendsPerSecond: Double, readsPerSecond: Double, appendCPUns: Double, readCPUns: Double) {
    let event = Array(("{\"type\":\"track\",\"event\":\"Product Viewed\",\"messageId\":\"3f2a9c1e-4b7d-4e21-9a55-0c1d2e3f4a5b\","
        + "\"properties\":{\"product_id\":\"p-123\",\"price\":19.99,\"currency\":\"USD\",\"quantity\":2},"
        + "\"context\":{\"library\":{\"name\":\"analytics-host\",\"version\":\"1.0\"},\"os\":{\"name\":\"Linux\"}},"
        + "\"anonymousId\":\"a1b2c3d4-e5f6-4711-8899-aabbccddeeff\",\"timestamp\":\"2026-11-26T00:00:00.000Z\","
        + "\"integrations\":{},\"userId\":\"user-42\",\"sentAt\":\"2026-11-26T00:00:00.000Z\"}").utf8)
    func cpu() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
    var best = (appendsPerSecond: 0.0, readsPerSecond: 0.0, appendCPUns: Double.infinity, readCPUns: Double.infinity)
    for _ in 0..<5 {
        let dir = NSTemporaryDirectory() + "analytics-bench-queue-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configuration = DurableQueue.Configuration(maxDiskBytes: 1 << 30)
        do {
            let queue = try DurableQueue(directory: dir, configuration: configuration)
            let start = monotonicSeconds(), startCPU = cpu()
            for _ in 0..<n { try queue.append(event) }
            best.appendCPUns = min(best.appendCPUns, (cpu() - startCPU) * 1e9 / Double(n))
            best.appendsPerSecond = max(best.appendsPerSecond, Double(n) / (monotonicSeconds() - start))
            try queue.close()
            let reader = try DurableQueue(directory: dir, configuration: configuration)
            let readStart = monotonicSeconds(), readCPU = cpu()
            var read = 0
            while read < n {
                let batch = try reader.peekBatch(maxEvents: 500, maxBytes: 500_000)
                if batch.isEmpty { break }
                read += batch.count
                try reader.acknowledge(batch)
            }
            best.readCPUns = min(best.readCPUns, (cpu() - readCPU) * 1e9 / Double(max(1, read)))
            best.readsPerSecond = max(best.readsPerSecond, Double(read) / (monotonicSeconds() - readStart))
            try reader.close()
        } catch {
            FileHandle.standardError.write(Data("analytics-bench: queue: \(error)\n".utf8))
        }
    }
    return best
}

/// The queue row's text: rates, then CPU time per event.
func queueRowText(_ r: (appendsPerSecond: Double, readsPerSecond: Double, appendCPUns: Double, readCPUns: Double)) -> String {
    "\(formatRate(r.appendsPerSecond)) / \(formatRate(r.readsPerSecond)) (CPU \(String(format: "%.0f / %.0f", r.appendCPUns, r.readCPUns)) ns/event)"
}
