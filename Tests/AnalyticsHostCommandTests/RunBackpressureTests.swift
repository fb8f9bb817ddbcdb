import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Issue item 1: the command reads faster than a slow server accepts, with a disk cap far smaller
/// than the input. Reading slows down to the upload rate; nothing is dropped; everything arrives.
@Suite(.serialized) struct RunBackpressureTests {
    /// Lines in the input: the issue's 500,000 (about 800× the cap). `AH_BACKPRESSURE_LINES=N`
    /// runs another size.
    static var lineCount: Int {
        ProcessInfo.processInfo.environment["AH_BACKPRESSURE_LINES"].flatMap(Int.init) ?? 500_000
    }

    /// The `N` of every `"messageId":"m-N"` in an upload body, found with memchr and memcmp rather
    /// than a JSON parse: the server must not be the slow part of a debug build run (the command is).
    static func messageIndices(_ body: [UInt8]) -> [Int] {
        let needle = Array(#"messageId":"m-"#.utf8)  // after the opening quote
        var found: [Int] = []
        body.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count, let quote = memchr(base + offset, 0x22, raw.count - offset) {
                var i = UnsafeRawPointer(quote) - base + 1
                offset = i
                guard i + needle.count <= raw.count, memcmp(base + i, needle, needle.count) == 0 else { continue }
                i += needle.count
                var n = 0
                while i < raw.count, raw[i] >= 0x30, raw[i] <= 0x39 { n = n * 10 + Int(raw[i] - 0x30); i += 1 }
                found.append(n)
                offset = i
            }
        }
        return found
    }

    @Test func aSmallDiskCapAndASlowServerSlowTheInputAndDropNothing() throws {
        let dir = makeTempDirectory("backpressure")
        let count = Self.lineCount
        let seen = Locked<[UInt8]>([UInt8](repeating: 0, count: count))
        let requests = Locked(0)
        // A slow server: every answer takes 20 ms (the connection thread holds it back).
        let server = try LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, onRequest: { request in
            usleep(20_000)
            let indices = Self.messageIndices(request.body)
            seen.withLock { flags in
                for i in indices where i < flags.count && flags[i] < 255 { flags[i] += 1 }
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
