import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Throughput of batch building + gzip + HTTP upload to the loopback server. Runs only with
/// ANALYTICS_BENCH=1 (it takes seconds and wants a release build):
///   ANALYTICS_BENCH=1 swift test -c release --filter UploadThroughput
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["ANALYTICS_BENCH"] == "1"))
struct UploadThroughputTests {
    struct Measurement: CustomStringConvertible {
        var label: String
        var batches: Int
        var events: Int
        var seconds: Double
        var wireBytes: Int
        var description: String {
            let perBatch = events / max(1, batches)
            return "\(label): \(batches) batches × \(perBatch) events in \(String(format: "%.2f", seconds)) s = "
                + "\(Int(Double(batches) / seconds)) uploads/s, \(Int(Double(events) / seconds)) events/s, "
                + "\(wireBytes / max(1, batches)) gzip bytes/batch"
        }
    }

    /// Events in an upload body, counted by their `"messageId"` keys without parsing.
    static func countEvents(_ body: [UInt8]) -> Int {
        let needle = Array(#""messageId""#.utf8)
        var n = 0
        body.withUnsafeBufferPointer { b in
            var i = 0
            let last = b.count - needle.count
            while i <= last {
                if b[i] == needle[0] && b[i + 1] == needle[1] && b[i + 10] == needle[10] && b[i + 5] == needle[5] {
                    n += 1
                    i += needle.count
                } else {
                    i += 1
                }
            }
        }
        return n
    }

    func run(label: String, eventSize: Int, totalEvents: Int, maxBytes: Int = BatchLimits.maxBatchBytes,
             threads: Int = 1, serverInflates: Bool, compressionLevel: Int32 = 1) throws -> Measurement {
        let received = Locked<Int>(0)
        var onRequest: (@Sendable (RecordedRequest) -> Void)?
        if serverInflates {
            onRequest = { (r: RecordedRequest) -> Void in
                let n = Self.countEvents(r.body)
                received.withLock { (v: inout Int) -> Void in v += n }
            }
        }
        let server = try LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, onRequest: onRequest))
        defer { server.stop() }
        // Pre-build the batches (events are serialized once, as the storage layer would hold them).
        let template = TestEvents.tracks(4_000, size: eventSize)
        var builder = BatchBuilder(writeKey: "bench", maxBytes: maxBytes)
        var batches: [UploadBatch] = []
        var built = 0
        let buildStart = monotonicSeconds()
        while built < totalEvents {
            if try !builder.append(template[built % template.count]) {
                batches.append(builder.finish())
                continue
            }
            built += 1
        }
        if !builder.isEmpty { batches.append(builder.finish()) }
        let buildSeconds = monotonicSeconds() - buildStart
        print("  build: \(totalEvents) events into \(batches.count) batches in \(String(format: "%.3f", buildSeconds)) s")

        let config = UploadConfiguration(writeKey: "bench", apiHost: "\(server.baseURL)/v1", compressionLevel: compressionLevel)
        let uploader = Uploader(configuration: config, sleeper: RecordingSleeper())
        _ = uploader.deliver(batches[0])  // warm up (connection, session)
        server.reset()
        received.withLock { $0 = 0 }

        let next = Locked<Int>(0)
        let failures = Locked<Int>(0)
        let group = DispatchGroup()
        let start = monotonicSeconds()
        for _ in 0..<threads {
            group.enter()
            let all = batches
            Thread.detachNewThread {
                while true {
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    if i >= all.count { break }
                    let outcome: UploadOutcome = uploader.deliver(all[i])
                    if outcome.disposition != UploadOutcome.Disposition.delivered { failures.withLock { $0 += 1 } }
                }
                group.leave()
            }
        }
        group.wait()
        let seconds = monotonicSeconds() - start
        #expect(failures.withLock { $0 } == 0)
        #expect(server.requestCount == batches.count)
        if serverInflates { #expect(received.withLock { $0 } == totalEvents) }
        return Measurement(label: label, batches: batches.count, events: totalEvents, seconds: seconds, wireBytes: server.wireBytes)
    }

    @Test func uploadThroughput() throws {
        var results: [Measurement] = []
        results.append(try run(label: "600 B events, 475 KB batches, 1 thread", eventSize: 600, totalEvents: 200_000, serverInflates: true))
        results.append(try run(label: "600 B events, 475 KB batches, 2 threads", eventSize: 600, totalEvents: 200_000, threads: 2, serverInflates: true))
        results.append(try run(label: "600 B events, 2,500/batch (1.5 MB, over the API limit), 1 thread", eventSize: 600, totalEvents: 200_000,
                               maxBytes: 2_000_000, serverInflates: true))
        results.append(try run(label: "185 B events, 2,500/batch, 1 thread", eventSize: 185, totalEvents: 500_000, serverInflates: true))
        results.append(try run(label: "600 B events, 475 KB batches, server does not inflate", eventSize: 600, totalEvents: 200_000, serverInflates: false))
        results.append(try run(label: "600 B events, 475 KB batches, no gzip, 1 thread", eventSize: 600, totalEvents: 200_000,
                               serverInflates: true, compressionLevel: 0))
        results.append(try run(label: "600 B events, 10/batch (request overhead), 1 thread", eventSize: 600, totalEvents: 20_000,
                               maxBytes: 6_200, serverInflates: true))
        for r in results { print(r) }
    }

    @Test func gzipAndBuildCost() throws {
        let events = TestEvents.tracks(790, size: 600)
        let (batches, _) = BatchBuilder.split(events, writeKey: "bench")
        let body = batches[0].body()
        let z = GzipCompressor()
        var out = 0
        let n = 200
        let start = monotonicSeconds()
        for _ in 0..<n { out = try z.compress(body).count }
        let seconds = monotonicSeconds() - start
        print("gzip level 1: \(body.count) → \(out) bytes, \(String(format: "%.2f", seconds / Double(n) * 1000)) ms/batch, "
              + "\(Int(Double(body.count * n) / seconds / 1e6)) MB/s")
        let z6 = GzipCompressor(level: 6)
        let s6 = monotonicSeconds()
        for _ in 0..<n { out = try z6.compress(body).count }
        print("gzip level 6: → \(out) bytes, \(String(format: "%.2f", (monotonicSeconds() - s6) / Double(n) * 1000)) ms/batch")
        let packed = try z.compress(body)
        let si = monotonicSeconds()
        var count = 0
        for _ in 0..<n { count += Self.countEvents(try Gzip.decompress(packed)) }
        let sc = monotonicSeconds()
        for _ in 0..<n { count += Self.countEvents(body) }
        print("count only: \(String(format: "%.2f", (monotonicSeconds() - sc) / Double(n) * 1000)) ms/batch")
        print("gunzip + count: \(String(format: "%.2f", (monotonicSeconds() - si) / Double(n) * 1000)) ms/batch (\(count / n) events)")
    }
}
