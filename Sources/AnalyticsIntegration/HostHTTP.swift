import CAnalyticsABI
import Foundation

/// The host's HTTP client for uploads (ABI 1.3 `AH_EXT_HTTP_REQUESTS`): a request starts and
/// returns at once, its answer arrives later on a host thread. The host sends it (TLS, its proxy
/// settings and timeouts; gzip on request), so an integration carries no HTTP stack of its own,
/// and in process mode the host makes the request for the library's runner, which needs no
/// network access.
public struct HostHTTP: @unchecked Sendable {
    // @unchecked: a host-owned immutable table, valid until the instance ends.
    let table: UnsafePointer<ah_host_http_requests>
    let ctx: UnsafeMutableRawPointer?

    /// How many requests one instance may have running at once; `start` refuses more (retryable).
    public var maxInFlight: Int { Int(table.pointee.max_in_flight) }

    /// One header.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A request to start.
    public struct Request: Sendable {
        public var method: String
        public var url: String
        public var headers: [Header]
        public var body: [UInt8]
        /// The host gzips the body and adds `Content-Encoding: gzip`.
        public var gzip: Bool
        /// The whole exchange's bound (nil: the host's default).
        public var timeoutSeconds: Double?

        public init(method: String = "POST", url: String, headers: [Header] = [], body: [UInt8] = [], gzip: Bool = false,
                    timeoutSeconds: Double? = nil) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
            self.gzip = gzip
            self.timeoutSeconds = timeoutSeconds
        }
    }

    /// What became of a request.
    public enum Answer: Sendable {
        /// The server answered (any status); header names in lower case.
        case response(status: Int, headers: [Header], body: [UInt8])
        /// No answer (network error, timeout, cancelled because the instance ends): worth retrying.
        case failed(String)

        /// A response header's value by name (case-insensitive).
        public func header(_ name: String) -> String? {
            guard case .response(_, let headers, _) = self else { return nil }
            let wanted = name.lowercased()
            return headers.first { $0.name.lowercased() == wanted }?.value
        }

        /// `Retry-After` in seconds when the server gave it as a number (an HTTP date is left to
        /// the host's own backoff); nil otherwise.
        public var retryAfterSeconds: Double? {
            guard let text = header("Retry-After"), let seconds = Double(text.trimmingCharacters(in: .whitespaces)),
                  seconds.isFinite, seconds >= 0 else { return nil }
            return seconds
        }
    }

    /// Starts `request`; `done` is called exactly once, later, on a host thread (never from
    /// inside `start`; it may start another request). Throws `.retryable` when `maxInFlight`
    /// requests are running or the host is stopping (start it again from a `done`), `.permanent`
    /// for a malformed request; `done` is then never called. Returns the request's id.
    @discardableResult
    public func start(_ request: Request, done: @escaping @Sendable (Answer) -> Void) throws(IntegrationError) -> UInt64 {
        // Every text the C request points to lives in one buffer for the call.
        var bytes: [UInt8] = []
        var spans: [(Int, Int)] = []
        func add(_ text: String) {
            spans.append((bytes.count, text.utf8.count))
            bytes.append(contentsOf: text.utf8)
        }
        add(request.method)
        add(request.url)
        for header in request.headers {
            add(header.name)
            add(header.value)
        }
        let user = Unmanaged.passRetained(DoneBox(done)).toOpaque()
        var id: UInt64 = 0
        let err = UnsafeMutablePointer<CChar>.allocate(capacity: 512)
        defer { err.deallocate() }
        err[0] = 0
        let status: ah_status = bytes.withUnsafeBufferPointer { text in
            let base = UnsafeRawPointer(text.baseAddress).map { $0.assumingMemoryBound(to: CChar.self) }
            func pointer(_ i: Int) -> UnsafePointer<CChar>? { base.map { $0 + spans[i].0 } }
            var headers: [ah_http_header] = []
            for n in 0..<request.headers.count {
                let name = 2 + 2 * n, value = name + 1
                headers.append(ah_http_header(name: pointer(name), name_len: spans[name].1, value: pointer(value), value_len: spans[value].1))
            }
            return headers.withUnsafeBufferPointer { headerList in
                request.body.withUnsafeBufferPointer { body in
                    var c = ah_http_request()
                    c.size = UInt32(MemoryLayout<ah_http_request>.size)
                    c.flags = request.gzip ? UInt32(AH_HTTP_GZIP) : 0
                    c.method = pointer(0)
                    c.method_len = spans[0].1
                    c.url = pointer(1)
                    c.url_len = spans[1].1
                    c.headers = headerList.isEmpty ? nil : headerList.baseAddress
                    c.header_count = headerList.count
                    c.body = body.isEmpty ? nil : UnsafeRawPointer(body.baseAddress!).assumingMemoryBound(to: CChar.self)
                    c.body_len = body.count
                    c.timeout_ms = request.timeoutSeconds.map { UInt32(max(1, min(3_600_000, ($0 * 1000).rounded(.up)))) } ?? 0
                    return table.pointee.start(ctx, &c, hostHTTPDone, user, &id, err, 512)
                }
            }
        }
        guard status == ah_status(AH_OK) else {
            Unmanaged<DoneBox>.fromOpaque(user).release()
            let reason = String(cString: err)
            let text = "could not start \(request.method) \(request.url): \(reason.isEmpty ? "refused by the host" : reason)"
            throw status == ah_status(AH_ERR_RETRYABLE) ? .retryable(text) : .permanent(text)
        }
        return id
    }
}

/// The Swift closure behind one request's `user` pointer.
final class DoneBox {
    let done: @Sendable (HostHTTP.Answer) -> Void
    init(_ done: @escaping @Sendable (HostHTTP.Answer) -> Void) { self.done = done }
}

private func hostHTTPDone(_ user: UnsafeMutableRawPointer?, _ id: UInt64, _ response: UnsafePointer<ah_http_response>) {
    guard let user else { return }
    let box = Unmanaged<DoneBox>.fromOpaque(user).takeRetainedValue()
    let r = response.pointee
    func text(_ pointer: UnsafePointer<CChar>?, _ count: Int) -> String {
        guard let pointer, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
    guard r.outcome == ah_status(AH_OK) else {
        let why = text(r.error, r.error_len)
        box.done(.failed(why.isEmpty ? "no answer" : why))
        return
    }
    var headers: [HostHTTP.Header] = []
    if let list = r.headers {
        for i in 0..<r.header_count {
            headers.append(.init(text(list[i].name, list[i].name_len), text(list[i].value, list[i].value_len)))
        }
    }
    let body: [UInt8] = r.body.map { Array(UnsafeRawBufferPointer(start: $0, count: r.body_len)) } ?? []
    box.done(.response(status: Int(r.status_code), headers: headers, body: body))
}
