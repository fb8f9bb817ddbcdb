import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// `analytics-host receive` holds under abuse: a real child process on 127.0.0.1, driven over raw
/// sockets the way a broken or hostile client would (and out of descriptors, with a lowered
/// RLIMIT_NOFILE).
@Suite(.serialized) struct ReceiverAbuseTests {
    /// A running `receive`; `stop()` sends SIGTERM and returns its exit status and standard error.
    final class ReceiveProcess {
        let process = Process()
        let errors = Pipe()
        let port: Int
        private let seen = Mutex("")

        /// - Parameter fileLimit: the RLIMIT_NOFILE the receiver runs under (set by the shell
        ///   that execs it), nil for the inherited one.
        init(_ arguments: [String], directory: String, fileLimit: Int? = nil) throws {
            let host = try HostBinary.path()
            if let fileLimit {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "ulimit -n \(fileLimit) && exec \"$0\" \"$@\"", host, "receive", "--port", "0",
                                     "--out", directory + "/received.ndjson", "--quiet"] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: host)
                process.arguments = ["receive", "--port", "0", "--out", directory + "/received.ndjson", "--quiet"] + arguments
            }
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            var found: Int?
            var text = ""
            while found == nil {
                let data = errors.fileHandleForReading.availableData
                guard !data.isEmpty else { throw RawHTTPConnection.Failure(description: "receive ended before listening: \(text)") }
                text += String(decoding: data, as: UTF8.self)
                if let match = text.firstMatch(of: /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/), text.contains("Ctrl-C stops\n") {
                    found = Int(match.output.1)
                }
            }
            port = found!
            seen.withLock { $0 = text }
        }

        var url: String { "http://127.0.0.1:\(port)/v1" }

        /// Waits (reading its standard error) until it has written `text`; false at the deadline.
        func waitForLog(_ text: String, timeout: Double = 10) -> Bool {
            let deadline = monotonicSeconds() + timeout
            while !seen.withLock({ $0.contains(text) }) {
                guard monotonicSeconds() < deadline else { return false }
                var poller = pollfd(fd: errors.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { return seen.withLock { $0.contains(text) } }
                seen.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
            return true
        }

        func stop() -> (status: Int32, stderr: String) {
            process.terminate()
            let rest = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, seen.withLock { $0 } + String(decoding: rest, as: UTF8.self))
        }
    }

    static func post(_ path: String, _ body: String, headers: [String] = []) -> String {
        post(path, Array(body.utf8), headers: headers)
    }

    static func postHead(_ path: String, length: Int, headers: [String] = []) -> String {
        "POST /v1\(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "Content-Length: \(length)\r\n\r\n"
    }

    static func post(_ path: String, _ body: [UInt8], headers: [String] = []) -> String {
        postHead(path, length: body.count, headers: headers) + String(decoding: body, as: UTF8.self)
    }

    /// One request on a fresh connection, answered.
    static func exchange(_ port: Int, _ request: [UInt8]) throws -> RawHTTPConnection.Answer {
        let connection = try RawHTTPConnection(port: port)
        connection.send(request)
        guard let answer = connection.answer() else { throw RawHTTPConnection.Failure(description: "no answer") }
        return answer
    }

    static func exchange(_ port: Int, _ request: String) throws -> RawHTTPConnection.Answer {
        try exchange(port, Array(request.utf8))
    }

    static let event = #"{"type":"track","event":"E","userId":"u"}"#

    // MARK: Descriptors

    /// Out of descriptors, `accept` fails with EMFILE: the receiver backs off, says so once, and
    /// serves again as soon as descriptors are free (today the accept loop ended for good and
    /// every later request timed out).
    @Test func runningOutOfDescriptorsDoesNotEndAccepting() throws {
        let dir = makeTempDirectory("receive-emfile")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess([], directory: dir, fileLimit: 48)
        var held: [RawHTTPConnection] = []
        // More connections than it has descriptors for: the kernel completes them all (the
        // listen backlog), the receiver runs out while accepting them.
        for _ in 0..<80 { held.append(try RawHTTPConnection(port: receiver.port)) }
        #expect(receiver.waitForLog("accept() failed: Too many open files; backing off"), "the receiver says it ran out")
        held.removeAll()  // closes them: its descriptors come back

        // It accepts again: a request is answered.
        var answered: RawHTTPConnection.Answer?
        #expect(eventually(timeout: 20) {
            answered = try? Self.exchange(receiver.port, Self.post("/t", Self.event))
            return answered != nil
        })
        #expect(answered?.status == 200)
        #expect(receiver.waitForLog("accept() works again"))
        let (status, stderr) = receiver.stop()
        #expect(status == 0)
        #expect(stderr.components(separatedBy: "accept() failed").count == 2, "logged once: \(stderr)")
        #expect(try String(contentsOfFile: dir + "/received.ndjson", encoding: .utf8) == Self.event + "\n")
    }

    // MARK: Body size

    /// A body over --max-body is refused with 413 before it is read; a chunked one as soon as it
    /// passes the cap; a gzip body that inflates past it too.
    @Test func bodiesOverTheCapAre413() throws {
        let dir = makeTempDirectory("receive-413")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess(["--max-body", "65536"], directory: dir)

        // 600 MB announced, nothing sent: answered at once.
        let huge = try Self.exchange(receiver.port, Self.postHead("/b", length: 600 << 20))
        #expect(huge.statusLine == "HTTP/1.1 413 Payload Too Large")
        #expect(huge.code == "payload_too_large" && huge.message?.contains("65536") == true, "\(huge.body)")
        #expect(huge.headers["connection"] == "close")

        let chunk = String(repeating: " ", count: 40_000)
        let chunked = "POST /v1/b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "9c40\r\n\(chunk)\r\n9c40\r\n\(chunk)\r\n0\r\n\r\n"
        #expect(try Self.exchange(receiver.port, chunked).status == 413)

        let bomb = try Gzip.compress(Array(#"{"batch":[],"pad":""#.utf8) + [UInt8](repeating: 0x20, count: 1 << 20) + Array(#""}"#.utf8))
        #expect(bomb.count < 65536)
        let inflated = try Self.exchange(receiver.port, Array(Self.postHead("/b", length: bomb.count, headers: ["Content-Encoding: gzip"]).utf8) + bomb)
        #expect(inflated.status == 413 && inflated.message?.contains("inflates to more than") == true, "\(inflated.body)")

        // Under the cap: taken.
        #expect(try Self.exchange(receiver.port, Self.post("/t", Self.event)).status == 200)
        let (_, stderr) = receiver.stop()
        #expect(stderr.contains("1 event received in 1 request, 3 refused"), "\(stderr)")
    }

    // MARK: Time and connections

    /// A silent connection is closed after --idle-timeout; a request that stops half-way gets 408.
    @Test func idleAndStalledConnectionsAreClosed() throws {
        let dir = makeTempDirectory("receive-idle")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess(["--idle-timeout", "0.5"], directory: dir)
        let started = monotonicSeconds()
        let silent = try RawHTTPConnection(port: receiver.port)
        #expect(silent.closedByPeer(), "closed, not held")
        #expect(monotonicSeconds() - started < 5)

        let stalled = try RawHTTPConnection(port: receiver.port)
        stalled.send("POST /v1/t HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"type\":")
        let answer = try #require(stalled.answer())
        #expect(answer.status == 408 && answer.code == "request_timeout", "\(answer.statusLine) \(answer.body)")
        #expect(stalled.closedByPeer())

        // A keep-alive connection serves requests, then is closed when it goes quiet.
        let kept = try RawHTTPConnection(port: receiver.port)
        kept.send(Self.post("/t", Self.event))
        #expect(kept.answer()?.status == 200)
        #expect(kept.closedByPeer())
        _ = receiver.stop()
    }

    /// Past --max-connections, a connection is answered 503 (server_busy, Retry-After) and
    /// closed; once one closes, new ones are served again.
    @Test func connectionsPastTheCapAre503() throws {
        let dir = makeTempDirectory("receive-cap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess(["--max-connections", "2"], directory: dir)
        var open: [RawHTTPConnection] = []
        for _ in 0..<2 {
            let c = try RawHTTPConnection(port: receiver.port)
            c.send(Self.post("/t", Self.event))
            #expect(c.answer()?.status == 200, "served, and kept alive")
            open.append(c)
        }
        let third = try Self.exchange(receiver.port, Self.post("/t", Self.event))
        #expect(third.status == 503 && third.code == "server_busy" && third.headers["retry-after"] == "1", "\(third.body)")
        open.removeFirst()
        var again: RawHTTPConnection.Answer?
        #expect(eventually {
            again = try? Self.exchange(receiver.port, Self.post("/t", Self.event))
            return again?.status == 200
        }, "served once a connection closed: \(String(describing: again?.statusLine))")
        let (_, stderr) = receiver.stop()
        #expect(stderr.contains("refused a request: 503 too many connections (limit 2)"), "\(stderr)")
    }

    // MARK: Malformed HTTP, codes, reasons

    @Test func malformedHTTPIs400AndRefusalsCarryCodeAndMessage() throws {
        let dir = makeTempDirectory("receive-malformed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess(["--write-key", "secret"], directory: dir)
        for garbage in ["HELLO\r\n\r\n", "POST /v1/b HTTP/1.1\r\nContent-Length: twelve\r\n\r\n",
                        "POST /v1/b HTTP/1.1\r\nno colon here\r\n\r\n", "post /v1/b HTTP/1.1\r\n\r\n"] {
            let answer = try Self.exchange(receiver.port, garbage)
            #expect(answer.statusLine == "HTTP/1.1 400 Bad Request" && answer.code == "invalid_request", "\(garbage.debugDescription): \(answer.body)")
        }
        let bigHead = "GET /v1/b HTTP/1.1\r\nX-Pad: \(String(repeating: "a", count: 70_000))\r\n\r\n"
        #expect(try Self.exchange(receiver.port, bigHead).status == 431)

        let get = try Self.exchange(receiver.port, "GET /v1/b HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(get.statusLine == "HTTP/1.1 405 Method Not Allowed")
        #expect(get.code == "method_not_allowed" && get.message == "GET /v1/b: only POST is accepted")
        let unauthorized = try Self.exchange(receiver.port, Self.post("/t", Self.event))
        #expect(unauthorized.status == 401 && unauthorized.code == "unauthorized" && unauthorized.message?.contains("no write key") == true)
        let missing = try Self.exchange(receiver.port, Self.post("/nope", "{}"))
        #expect(missing.status == 404 && missing.code == "not_found")
        _ = receiver.stop()
    }

    // MARK: The tracking API's limits and fields

    /// 32 KB per event, 500 KB and 2,500 events per batch, the nesting the upload allows: 400, as
    /// the real API answers; `sentAt` is kept and a single call gets its endpoint's `type`.
    @Test func apiLimitsAre400AndFieldsAreKept() throws {
        let dir = makeTempDirectory("receive-limits")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try ReceiveProcess([], directory: dir)
        let port = receiver.port
        let big = #"{"type":"track","event":"E","userId":"u","p":"\#(String(repeating: "x", count: 33_000))"}"#
        let oneTooBig = try Self.exchange(port, Self.post("/b", #"{"batch":[\#(Self.event),\#(big)]}"#))
        #expect(oneTooBig.status == 400 && oneTooBig.code == "event_too_large" && oneTooBig.message?.hasPrefix("batch[1] is") == true, "\(oneTooBig.body)")
        #expect(try Self.exchange(port, Self.post("/t", big)).code == "event_too_large")
        let manyEvents = Array(repeating: Self.event, count: 2_501).joined(separator: ",")
        let tooMany = try Self.exchange(port, Self.post("/b", #"{"batch":[\#(manyEvents)]}"#))
        #expect(tooMany.status == 400 && tooMany.code == "batch_too_large", "\(tooMany.body)")
        let fat = #"{"type":"track","event":"E","userId":"u","p":"\#(String(repeating: "x", count: 30_000))"}"#
        let heavy = try Self.exchange(port, Self.post("/b", #"{"batch":[\#(Array(repeating: fat, count: 18).joined(separator: ","))]}"#))
        #expect(heavy.status == 400 && heavy.code == "batch_too_large" && heavy.message?.contains("\(BatchLimits.apiMaxBatchBytes)") == true)
        let deep = String(repeating: #"{"a":"#, count: BatchLimits.maxEventDepth + 1) + "1" + String(repeating: "}", count: BatchLimits.maxEventDepth + 1)
        let tooDeep = try Self.exchange(port, Self.post("/identify", deep))
        #expect(tooDeep.status == 400 && tooDeep.code == "nesting_too_deep", "\(tooDeep.body)")

        #expect(try Self.exchange(port, Self.post("/identify", #"{"userId":"u","traits":{}}"#)).status == 200)
        #expect(try Self.exchange(port, Self.post("/track", #"{"type":"track","event":"Kept","userId":"u"}"#)).status == 200)
        #expect(try Self.exchange(port, Self.post("/b", #"{"batch":[{"type":"track","event":"B","userId":"u"},{"type":"track","event":"C","userId":"u","sentAt":"2026-01-01T00:00:00Z"}],"sentAt":"2026-11-25T10:00:00.000Z"}"#)).status == 200)
        let (_, stderr) = receiver.stop()
        #expect(stderr.contains("4 events received in 3 requests, 5 refused"), "\(stderr)")
        let lines = try String(contentsOfFile: dir + "/received.ndjson", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines == [
            #"{"userId":"u","traits":{},"type":"identify"}"#,
            #"{"type":"track","event":"Kept","userId":"u"}"#,
            #"{"type":"track","event":"B","userId":"u","sentAt":"2026-11-25T10:00:00.000Z"}"#,
            #"{"type":"track","event":"C","userId":"u","sentAt":"2026-01-01T00:00:00Z"}"#,
        ])
    }
}
