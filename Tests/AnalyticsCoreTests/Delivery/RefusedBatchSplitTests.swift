import AnalyticsTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// One event the server refuses never takes the good events of its batch down: a refused batch is
/// split until only the events refused alone are dropped, each reported; the exit status says so.
@Suite(.serialized) struct RefusedBatchSplitTests {
    static let marker = "refuse-me"

    /// A server that refuses (400, in the API's error shape) any batch holding the marked event.
    static func refusingServer() throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer(options: .init(respond: { request in
            guard request.bodyText.contains(marker) else { return nil }
            return .json(#"{"code":"invalid_request","message":"event \#(marker) is not acceptable"}"#, status: 400)
        }))
    }

    static func settings(in dir: String, port: UInt16) throws -> String {
        let path = dir + "/settings-\(port).json"
        try #"{"integrations":{"Segment.io":{"apiKey":"k","apiHost":"http://127.0.0.1:\#(port)/v1"}}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func events(_ count: Int, marked: Int) -> String {
        (0..<count).map { i in
            let name = i == marked ? marker : "E"
            return #"{"type":"track","event":"\#(name)","userId":"u","messageId":"m-\#(i)"}"#
        }.joined(separator: "\n") + "\n"
    }

    /// Whether a queue segment file under `directory` holds `text`.
    static func stored(_ text: String, in directory: String) -> Bool {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.contains { name in
            guard name.hasSuffix(".seg"), let data = FileManager.default.contents(atPath: directory + "/" + name) else { return false }
            return data.range(of: Data(text.utf8)) != nil
        }
    }

    /// "Segment.io  1000  999  0  0  1  0  0" → [1000, 999, 0, 0, 1, 0, 0]
    static func row(_ stdout: String, _ key: String) -> [Int]? {
        for line in stdout.split(separator: "\n") {
            let cells = line.split(separator: " ")
            if cells.first.map(String.init) == key, cells.count == 8 { return cells.dropFirst().compactMap { Int($0) } }
        }
        return nil
    }

    @Test func oneRefusedEventAmongAThousandIsTheOnlyOneLost() throws {
        let dir = makeTempDirectory("split-1000")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        let server = try Self.refusingServer()
        defer { server.stop() }
        let result = try HostBinary.run(["run", "--settings", try Self.settings(in: dir, port: server.port), "--plugins", dir + "/plugins",
                                         "--storage", dir + "/s", "--quiet"],
                                        stdin: Self.events(1_000, marked: 500), in: dir)
        #expect(result.status == 5, "a server rejection: \(result.stderr)")
        let delivered = Set(try server.batches().filter { !$0.request.bodyText.contains(Self.marker) }.flatMap(\.messageIds))
        #expect(delivered == Set((0..<1_000).filter { $0 != 500 }.map { "m-\($0)" }), "the 999 good events are delivered")
        #expect(Self.row(result.stdout, "Segment.io") == [1_000, 999, 0, 0, 1, 0, 0], "\(result.stdout)")
        #expect(result.stderr.contains("messageId m-500"), "the refused event is reported: \(result.stderr)")
        #expect(result.stderr.contains("event refuse-me is not acceptable"), "with the server's message")
        #expect(result.stdout.contains("the server refused event messageId m-500: HTTP 400"), "the summary names it: \(result.stdout)")
        #expect(server.requestCount < 40, "halving finds it in a few requests, not one per event (\(server.requestCount))")
    }

    /// A rejected input line and a server rejection: 5, so that the loss at the server is not
    /// hidden behind the bad line (status 1).
    @Test func aServerRejectionOutranksARejectedLine() throws {
        let dir = makeTempDirectory("split-status")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        let server = try Self.refusingServer()
        defer { server.stop() }
        let input = "{not json\n" + Self.events(10, marked: 3)
        let result = try HostBinary.run(["run", "--settings", try Self.settings(in: dir, port: server.port), "--plugins", dir + "/plugins",
                                         "--storage", dir + "/s", "--quiet"], stdin: input, in: dir)
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("input line 1:"))
        #expect(result.stdout.contains("10 events accepted, 1 rejected"))
    }

    /// What the receiver refuses for its nesting, the run refuses on the line it reads, with the
    /// line number, and never queues; one level less is accepted and taken by the receiver.
    @Test func tooDeepAnEventIsRefusedOnItsLineAndTheDeepestAllowedIsReceived() throws {
        let dir = makeTempDirectory("split-depth")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        let collector = SegmentCollector()
        let server = try LoopbackHTTPServer(options: .init(respond: { request in
            if case .failure(let refusal) = collector.take(request) { return refusal.response }
            return nil
        }))
        defer { server.stop() }
        /// An event whose properties nest so that the whole event is `levels` deep.
        func nested(_ levels: Int, id: String) -> String {
            let inner = String(repeating: #"{"a":"#, count: levels - 1) + "1" + String(repeating: "}", count: levels - 1)
            return #"{"type":"track","event":"Deep","userId":"u","messageId":"\#(id)","properties":\#(inner)}"#
        }
        let limit = BatchLimits.maxEventDepth
        let input = [#"{"type":"track","event":"E","userId":"u","messageId":"ok"}"#,
                     nested(limit + 1, id: "too-deep"), nested(limit, id: "deepest")].joined(separator: "\n") + "\n"
        let result = try HostBinary.run(["run", "--settings", try Self.settings(in: dir, port: server.port), "--plugins", dir + "/plugins",
                                         "--storage", dir + "/s", "--quiet"], stdin: input, in: dir)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("input line 2:") && result.stderr.contains("deeper than \(limit) levels"), "\(result.stderr)")
        #expect(!result.stderr.contains("input line 3"), "\(result.stderr)")
        let received = Set(try server.messageIds())
        #expect(received == ["ok", "deepest"], "the deepest allowed event is taken by the receiver")
        #expect(Self.row(result.stdout, "Segment.io")?[4] == 0, "nothing failed at the server: \(result.stdout)")
    }

    /// SIGKILL while a refused batch is being split: nothing accepted is lost. The next run sends
    /// the stored batch again (what was delivered before the kill may arrive twice).
    @Test func aKillInTheMiddleOfASplitLosesNothing() throws {
        let dir = makeTempDirectory("split-kill")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        // The first server answers its third request never: the run is killed while it waits. Its
        // first answer waits until the whole input is on disk (accepted), so every event counts.
        let count = Atomic<Int>(0)
        let queueDirectory = dir + "/s/queue"
        let first = try LoopbackHTTPServer(options: .init(respond: { request in
            let n = count.wrappingAdd(1, ordering: .relaxed).newValue
            if n == 1 { _ = eventually(timeout: 20) { Self.stored("\"m-299\"", in: queueDirectory) } }
            if n == 3 { return .hang }
            guard request.bodyText.contains(Self.marker) else { return nil }
            return .json(#"{"code":"invalid_request","message":"no"}"#, status: 400)
        }))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HostBinary.path())
        process.arguments = ["run", "--settings", try Self.settings(in: dir, port: first.port), "--plugins", dir + "/plugins",
                             "--storage", dir + "/s", "--quiet", "--input", dir + "/in.ndjson"]
        try Self.events(300, marked: 7).write(toFile: dir + "/in.ndjson", atomically: true, encoding: .utf8)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(first.waitForRequests(3, timeout: 30), "the split reached its third request")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // Only what the first server answered 200 was delivered there.
        let answered = try first.requests.prefix(2).filter { !$0.bodyText.contains(Self.marker) }.flatMap { try ReceivedBatch($0).messageIds }
        first.stop()

        let second = try Self.refusingServer()
        defer { second.stop() }
        let rerun = try HostBinary.run(["run", "--settings", try Self.settings(in: dir, port: second.port), "--plugins", dir + "/plugins",
                                        "--storage", dir + "/s", "--quiet", "--input", "/dev/null"], in: dir)
        #expect(rerun.status == 5, "\(rerun.stderr)")
        let later = try second.batches().filter { !$0.request.bodyText.contains(Self.marker) }.flatMap(\.messageIds)
        let good = Set((0..<300).filter { $0 != 7 }.map { "m-\($0)" })
        #expect(good.isSubset(of: Set(answered + later)), "every good event delivered across the kill")
        #expect(!later.contains("m-7") && !answered.contains("m-7"))
        #expect(rerun.stderr.contains("messageId m-7"), "\(rerun.stderr)")
    }
}
