import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The uploader's plain-HTTP transport against real servers on 127.0.0.1: the project's loopback
/// server, and a raw TCP server that answers exactly the bytes a test gives (HTTP/1.0, chunks,
/// a connection closed while idle).
@Suite struct PlainHTTPTransportTests {
    func post(_ url: String, body: String = #"{"batch":[]}"#, timeout: Double = 5) -> HTTPRequest {
        HTTPRequest(method: "POST", url: URL(string: url)!, headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8), timeout: timeout)
    }

    @Test func keepsOneConnectionForRequestAfterRequest() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let client = HTTPClient(plainHTTPOverSockets: true)
        for i in 0..<5 {
            let r = try client.send(post("\(server.baseURL)/v1/b", body: #"{"n":\#(i)}"#)).get()
            #expect(r.status == 200)
        }
        #expect(server.requestCount == 5)
        #expect(server.connectionCount == 1)
        #expect(server.requests.map { String(decoding: $0.body, as: UTF8.self) } == (0..<5).map { #"{"n":\#($0)}"# })
        #expect(server.requests[0].header("Content-Type") == "application/json")
    }

    @Test func anHTTP10ServerThatClosesEachConnectionGetsANewOne() throws {
        let server = try RawServer { request in
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"success\":true,\"path\":\"\(request.path)\"}"
        }
        defer { server.stop() }
        let client = HTTPClient(plainHTTPOverSockets: true)
        for _ in 0..<3 {
            let r = try client.send(post("http://127.0.0.1:\(server.port)/v1/b")).get()
            #expect(r.status == 200)
            #expect(String(decoding: r.body, as: UTF8.self) == #"{"success":true,"path":"/v1/b"}"#)
        }
        #expect(server.connections == 3)
        #expect(server.bodies == Array(repeating: #"{"batch":[]}"#, count: 3))
    }

    @Test func readsAChunkedAnswerAndItsHeaders() throws {
        let server = try RawServer { _ in
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nslow \r\n5;x=1\r\ndown!\r\n0\r\n\r\n"
        }
        defer { server.stop() }
        let r = try HTTPClient(plainHTTPOverSockets: true).send(post("http://127.0.0.1:\(server.port)/v1/b")).get()
        #expect(r.status == 429)
        #expect(r.header("Retry-After") == "7")
        #expect(String(decoding: r.body, as: UTF8.self) == "slow down!")
    }

    @Test func aKeptConnectionTheServerClosedIsReplacedWithoutAFailure() throws {
        // Answers keep-alive, then closes the connection once the answer is out: the client's
        // idle connection is dead when the next request comes.
        let server = try RawServer(closeAfterAnswer: true) { _ in
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        }
        defer { server.stop() }
        let client = HTTPClient(plainHTTPOverSockets: true)
        for _ in 0..<3 {
            let r = try client.send(post("http://127.0.0.1:\(server.port)/v1/b")).get()
            #expect(r.status == 200)
            #expect(r.body == Array("ok".utf8))
        }
        #expect(server.bodies.count == 3)
    }

    @Test func noAnswerInTimeIsATimeoutAndARefusedConnectionANetworkError() throws {
        let server = try RawServer(answer: nil)
        defer { server.stop() }
        let client = HTTPClient(plainHTTPOverSockets: true)
        let started = monotonicSeconds()
        let result = client.send(post("http://127.0.0.1:\(server.port)/v1/b", timeout: 0.5))
        guard case .failure(.timedOut) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(monotonicSeconds() - started < 5)

        let closed = try RawServer(answer: nil)
        let port = closed.port
        closed.stop()
        guard case .failure(.network(_, let reason)) = client.send(post("http://127.0.0.1:\(port)/v1/b")) else {
            Issue.record("expected a network error")
            return
        }
        #expect(reason.contains("cannot connect"))
    }

    @Test func anEarlyAnswerToALargeBodyIsReadNotLost() throws {
        // The loopback server answers 413 from the Content-Length alone and closes: the client
        // must hand back that answer (the uploader splits the batch on it), not a write error.
        let server = try LoopbackHTTPServer(options: .init(limits: HTTPLimits(maxBodyBytes: 1024)))
        defer { server.stop() }
        let body = String(repeating: "x", count: 4 << 20)
        let r = try HTTPClient(plainHTTPOverSockets: true).send(post("\(server.baseURL)/v1/b", body: body)).get()
        #expect(r.status == 413)
    }
}

/// A TCP server on 127.0.0.1 that reads each request (head and Content-Length body) and writes
/// the text `answer` gives back verbatim (nil: never answers), keeping the connection open for
/// the next request unless the answer is HTTP/1.0 or `closeAfterAnswer`.
final class RawServer: @unchecked Sendable {
    struct Request { var path: String; var body: String }
    let port: UInt16
    private let fd: Int32
    private let lock = NSLock()
    private var _connections = 0
    private var _bodies: [String] = []
    private var open: [Int32] = []
    private var stopped = false
    var connections: Int { lock.withLock { _connections } }
    var bodies: [String] { lock.withLock { _bodies } }

    init(closeAfterAnswer: Bool = false, answer: (@Sendable (Request) -> String)?) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        fd = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in
            while true {
                let c = accept(listener, nil, nil)
                if c < 0 { return }
                lock.withLock { _connections += 1; open.append(c) }
                Thread.detachNewThread { [self] in serve(c, closeAfterAnswer: closeAfterAnswer, answer: answer) }
            }
        }
    }

    private func serve(_ c: Int32, closeAfterAnswer: Bool, answer: (@Sendable (Request) -> String)?) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            guard let headEnd = PlainHTTPTransport.find([13, 10, 13, 10], in: buffer) else {
                let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return }
                buffer += chunk[0..<n]
                continue
            }
            let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
            let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            while buffer.count < headEnd + 4 + length {
                let n = chunk.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return }
                buffer += chunk[0..<n]
            }
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            let body = String(decoding: buffer[(headEnd + 4)..<(headEnd + 4 + length)], as: UTF8.self)
            buffer.removeFirst(headEnd + 4 + length)
            lock.withLock { _bodies.append(body) }
            guard let answer else { continue }
            let text = Array(answer(Request(path: path, body: body)).utf8)
            _ = text.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if closeAfterAnswer || text.starts(with: Array("HTTP/1.0".utf8)) {
                shutdown(c, Int32(SHUT_RDWR))
                return
            }
        }
    }

    func stop() {
        lock.withLock {
            stopped = true
            for c in open { shutdown(c, Int32(SHUT_RDWR)) }
        }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
