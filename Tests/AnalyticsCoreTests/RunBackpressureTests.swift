import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Issue item 1: the command reads faster than a slow server accepts, with a disk cap far smaller
/// than the input. Reading slows down to the upload rate; nothing is dropped; everything arrives.
@Suite(.serialized) struct RunBackpressureTests {
    /// Lines in the input. 20,000 (about 30× the cap) keeps the debug suite quick (the debug build parses about 2,500
    /// lines/s); `AH_BACKPRESSURE_LINES=500000 swift test -c release --filter RunBackpressureTests`
    /// runs the issue's full size (about 15 s).
    static var lineCount: Int {
        ProcessInfo.processInfo.environment["AH_BACKPRESSURE_LINES"].flatMap(Int.init) ?? 20_000
    }

    @Test func aSmallDiskCapAndASlowServerSlowTheInputAndDropNothing() throws {
        let dir = makeTempDirectory("backpressure")
        let count = Self.lineCount
        let seen = Locked<[UInt8]>([UInt8](repeating: 0, count: count))
        let requests = Locked(0)
        // A slow server: every answer takes 20 ms (the connection thread holds it back).
        let server = try LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, onRequest: { request in
            usleep(20_000)
            guard let batch = try? ReceivedBatch(request) else { return }
            seen.withLock { flags in
                for id in batch.messageIds {
                    if id.hasPrefix("m-"), let i = Int(id.dropFirst(2)), i < flags.count, flags[i] < 255 { flags[i] += 1 }
                }
            }
            requests.withLock { $0 += 1 }
        }))
        defer { server.stop() }
        let input = dir + "/input.ndjson"
        _ = FileManager.default.createFile(atPath: input, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: input))
        var chunk = ""
        for i in 0..<count {
            chunk += #"{"type":"track","event":"Backpressure","messageId":"m-\#(i)","properties":{"i":\#(i),"pad":"abcdefghijklmnopqrstuvwxyz"}}"# + "\n"
            if chunk.utf8.count > 1 << 20 { handle.write(Data(chunk.utf8)); chunk = "" }
        }
        handle.write(Data(chunk.utf8))
        try handle.close()

        let cap = 256 << 10  // ~600 events: the input is about 100× the cap
        let result = try RunDrainTests.run(["--input", input, "--max-queue-bytes", String(cap), "--drain-timeout", "60"],
                                           settings: try RunDrainTests.settings(in: dir, port: server.port), storage: dir + "/s", in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr.prefix(2000))")
        #expect(result.stdout.contains("\(count) events accepted, 0 rejected"))
        #expect(result.stdout.contains("\(count) uploaded"), "\(result.stdout)")
        #expect(!result.stderr.contains("dropped"), "\(result.stderr.prefix(2000))")
        let flags = seen.withLock { $0 }
        let missing = flags.indices.filter { flags[$0] == 0 }
        #expect(missing.isEmpty, "\(missing.count) events never arrived, e.g. \(missing.prefix(5))")
        #expect(flags.allSatisfy { $0 <= 1 }, "no duplicates without a crash")
        #expect(requests.withLock { $0 } > count / 2_500, "the cap kept batches small: the disk never held the whole input")
    }
}
