import AnalyticsCore
import Foundation
import Glibc

/// A real HTTP/1.1 server on 127.0.0.1 (ephemeral port unless one is asked for) for tests,
/// benchmarks and `analytics-host receive`: POSIX sockets, a thread per connection, keep-alive,
/// `Expect: 100-continue`, gzip request bodies inflated. It records every request and answers from
/// ``Options/respond`` when set, else from a script (``enqueue(_:path:)``), falling back to
/// ``defaultResponse`` (200 `{"success":true}`).
///
/// It holds under abuse (it is also the development receiver, often left running): bodies over
/// ``HTTPLimits/maxBodyBytes`` get 413, silent or trickling connections are closed
/// (``HTTPLimits/idleTimeout``, ``HTTPLimits/requestTimeout``: 408), connections past
/// ``Options/maxConnections`` get 503, inflated bodies share one memory budget
/// (``Options/inflateBudgetBytes``: 503 when spent), malformed HTTP gets 400, and running out of
/// descriptors or memory in `accept` backs off and goes on (logged once per episode).
/// Refusals are JSON: `{"success":false,"code":"…","message":"…"}`.
///
/// Waiting helpers take deadlines, so tests never sleep to synchronise.
public final class LoopbackHTTPServer: @unchecked Sendable {
    public struct Options: Sendable {
        /// Keep request bodies in ``requests`` (turn off for benchmarks of millions of events).
        public var recordBodies: Bool
        /// Keep requests at all (counters are kept either way).
        public var recordRequests: Bool
        /// Called on the connection thread for every request, after recording.
        public var onRequest: (@Sendable (RecordedRequest) -> Void)?
        /// Answers a request on its connection thread (the body inflated); nil falls back to the script.
        public var respond: (@Sendable (RecordedRequest) -> ScriptedResponse?)?
        /// Port on 127.0.0.1 to listen on; 0 picks a free one (see ``LoopbackHTTPServer/port``).
        public var port: UInt16
        /// Body size and time limits of each request.
        public var limits: HTTPLimits
        /// Connections served at once; more are answered 503 and closed.
        public var maxConnections: Int
        /// Bytes of inflated bodies held at once across all connections (each gzip request
        /// reserves `limits.maxBodyBytes` of it while it is inflated and answered).
        public var inflateBudgetBytes: Int
        /// Seconds a gzip request waits for the budget before it is answered 503.
        public var inflateBudgetWait: Double
        /// Requests refused by the server itself (malformed, too large, too slow, too many, no
        /// budget), before ``respond`` sees them: status and why.
        public var onRefusal: (@Sendable (_ status: Int, _ message: String) -> Void)?
        /// Problems of the server itself (accept failing), one line each.
        public var log: (@Sendable (String) -> Void)?

        public init(recordBodies: Bool = true, recordRequests: Bool = true, onRequest: (@Sendable (RecordedRequest) -> Void)? = nil,
                    respond: (@Sendable (RecordedRequest) -> ScriptedResponse?)? = nil, port: UInt16 = 0,
                    limits: HTTPLimits = HTTPLimits(), maxConnections: Int = 512, inflateBudgetBytes: Int = 64 << 20,
                    inflateBudgetWait: Double = 2, onRefusal: (@Sendable (Int, String) -> Void)? = nil,
                    log: (@Sendable (String) -> Void)? = nil) {
            self.recordBodies = recordBodies
            self.recordRequests = recordRequests
            self.onRequest = onRequest
            self.respond = respond
            self.port = port
            self.limits = limits
            self.maxConnections = maxConnections
            self.inflateBudgetBytes = inflateBudgetBytes
            self.inflateBudgetWait = inflateBudgetWait
            self.onRefusal = onRefusal
            self.log = log
        }
    }

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    public let port: UInt16
    public let options: Options
    let listenFD: Int32
    let condition = NSCondition()
    let inflateBudget: InflateBudget
    // Guarded by `condition`:
    var script: [(path: String?, response: ScriptedResponse)] = []
    var fallback: ScriptedResponse = .ok
    var recorded: [RecordedRequest] = []
    var requestTotal = 0
    var wireBytesTotal = 0
    var connectionsAccepted = 0
    var openConnections: Set<Int32> = []
    var liveThreads = 0
    var stopped = false
    var refusedTotal = 0

    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public init(options: Options = Options()) throws {
        self.options = options
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = options.port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 256) == 0 else {
            let e = errno
            close(fd)
            throw StartError(description: "cannot listen on 127.0.0.1:\(options.port): \(String(cString: strerror(e)))")
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        self.listenFD = fd
        self.port = UInt16(bigEndian: addr.sin_port)
        self.inflateBudget = InflateBudget(total: max(options.inflateBudgetBytes, options.limits.maxBodyBytes + 1))
        liveThreads = 1
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { stop() }

    // MARK: Script

    /// Queues a response for the next request (to `path` only, when given). Responses are used once.
    public func enqueue(_ response: ScriptedResponse, path: String? = nil) {
        condition.lock()
        script.append((path, response))
        condition.unlock()
    }

    /// Queues the same response `count` times.
    public func enqueue(_ response: ScriptedResponse, times count: Int, path: String? = nil) {
        for _ in 0..<count { enqueue(response, path: path) }
    }

    /// Used when no queued response matches.
    public var defaultResponse: ScriptedResponse {
        get { condition.lock(); defer { condition.unlock() }; return fallback }
        set { condition.lock(); fallback = newValue; condition.unlock() }
    }

    // MARK: Observation

    public var requests: [RecordedRequest] {
        condition.lock(); defer { condition.unlock() }
        return recorded
    }

    public var requestCount: Int {
        condition.lock(); defer { condition.unlock() }
        return requestTotal
    }

    /// Request body bytes received (before gunzipping).
    public var wireBytes: Int {
        condition.lock(); defer { condition.unlock() }
        return wireBytesTotal
    }

    public var connectionCount: Int {
        condition.lock(); defer { condition.unlock() }
        return connectionsAccepted
    }

    /// Connections open right now.
    public var openConnectionCount: Int {
        condition.lock(); defer { condition.unlock() }
        return openConnections.count
    }

    /// Requests the server refused itself (see ``Options/onRefusal``).
    public var refusedCount: Int {
        condition.lock(); defer { condition.unlock() }
        return refusedTotal
    }

    /// Waits until at least `count` requests arrived; false at the deadline.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while requestTotal < count {
            if !condition.wait(until: deadline) { return requestTotal >= count }
        }
        return true
    }

    /// Forgets recorded requests (counters too) and the script.
    public func reset() {
        condition.lock()
        recorded.removeAll()
        script.removeAll()
        requestTotal = 0
        wireBytesTotal = 0
        condition.unlock()
    }

    // MARK: Lifecycle

    /// Stops accepting, wakes hung responses, closes every connection and waits (up to 5 s) for
    /// the server's threads to end. Idempotent.
    public func stop() {
        condition.lock()
        if stopped {
            condition.unlock()
            return
        }
        stopped = true
        Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
        for fd in openConnections { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: 5)
        while liveThreads > 0 {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
        close(listenFD)
    }
}

/// Writes all bytes, false when the peer went away.
func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { raw in
        var sent = 0
        while sent < raw.count {
            let n = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            sent += n
        }
        return true
    }
}
