import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Synchronization
import Testing

/// Inflated request bodies share one memory budget across connections: while one gzip request
/// holds it, another is answered 503 (the client retries) instead of inflating its own copy —
/// 16 concurrent gzip bombs no longer cost 16 times the per-request limit.
@Suite struct LoopbackServerInflateBudgetTests {
    /// Opened once by the test; a request inside the server waits for it (with a deadline).
    final class Gate: @unchecked Sendable {
        private let condition = NSCondition()
        private var isOpen = false
        private var waiting = 0

        func open() {
            condition.lock(); isOpen = true; condition.broadcast(); condition.unlock()
        }

        func wait() {
            condition.lock()
            waiting += 1
            condition.broadcast()
            let deadline = Date(timeIntervalSinceNow: 20)
            while !isOpen && condition.wait(until: deadline) {}
            condition.unlock()
        }

        var hasWaiter: Bool { condition.lock(); defer { condition.unlock() }; return waiting > 0 }
    }

    static func gzipPost(_ text: String) throws -> [UInt8] {
        let body = try Gzip.compress(Array(text.utf8))
        return Array("POST /v1/b HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    @Test func aSecondGzipBodyWaitsForTheBudgetThenGets503() throws {
        let gate = Gate()
        let limit = 256 * 1024
        let server = try LoopbackHTTPServer(options: .init(
            respond: { request in
                if request.bodyText.contains("hold") { gate.wait() }
                return nil
            },
            limits: HTTPLimits(maxBodyBytes: limit), inflateBudgetBytes: limit + 1, inflateBudgetWait: 0.2))
        defer { server.stop() }
        let first = try RawHTTPConnection(port: Int(server.port))
        first.send(try Self.gzipPost(#"{"batch":[],"note":"hold"}"#))
        #expect(eventually { gate.hasWaiter }, "the first request is inside the server, holding its share")

        let second = try ReceiverAbuseTests.exchange(Int(server.port), try Self.gzipPost(#"{"batch":[]}"#))
        #expect(second.status == 503 && second.code == "server_busy" && second.headers["retry-after"] == "1", "\(second.body)")
        // Uncompressed bodies need no inflating: not held back.
        #expect(try ReceiverAbuseTests.exchange(Int(server.port), ReceiverAbuseTests.post("/b", #"{"batch":[]}"#)).status == 200)

        gate.open()
        #expect(first.answer()?.status == 200)
        #expect(try ReceiverAbuseTests.exchange(Int(server.port), try Self.gzipPost(#"{"batch":[]}"#)).status == 200, "the budget came back")
        #expect(server.refusedCount == 1)
    }
}
