import CAnalyticsABI
import Foundation

/// `AH_EXT_HTTP_REQUESTS` (ABI 1.3): requests that a library starts and that finish later.
///
/// One `HTTPRequestsInFlight` per instance keeps the requests it started and their `done`
/// callbacks. Each callback runs exactly once: when the answer comes, or, for requests still
/// running when the instance ends, with a "cancelled" failure before its `destroy` (the real
/// answer arriving afterwards finds nothing to call), and `destroy` waits for a callback that is
/// still running (a library frees what its callback uses there). The bound on requests running
/// at once is per instance, so one library's uploads cannot take every connection of the process.
final class HTTPRequestsInFlight: Sendable {
    static let maxInFlight = 4

    /// The library's callback and its `user` pointer (the library's to keep valid).
    struct Completion: @unchecked Sendable {
        let done: ah_http_done_fn
        let user: UnsafeMutableRawPointer?
    }

    private struct State {
        var next: UInt64 = 1
        var running: [UInt64: Completion] = [:]
        var ended = false
        /// `done` callbacks in progress (their requests already left `running`).
        var calling = 0
    }
    private let state = Locked(State())
    /// Signalled when a `done` callback returns while the instance is ending.
    private let returned = NSCondition()
    private let key: String

    init(key: String) { self.key = key }

    enum StartError: Error { case busy(String), stopping(String) }

    /// Reserves an id for a request of this instance, or says why it may not start now.
    func reserve(_ completion: Completion) throws(StartError) -> UInt64 {
        let outcome = state.withLock { s -> Result<UInt64, StartError> in
            if s.ended { return .failure(.stopping("the instance is ending; no new request starts")) }
            if s.running.count >= Self.maxInFlight {
                return .failure(.busy("\(Self.maxInFlight) requests of \(key) are running (the bound per instance); start it again from a done callback"))
            }
            let id = s.next
            s.next += 1
            s.running[id] = completion
            return .success(id)
        }
        return try outcome.get()
    }

    /// The answer of request `id`: calls its `done` unless it was already completed (cancelled).
    func finish(_ id: UInt64, _ answer: NativeHTTPAnswer) {
        guard let completion = state.withLock({ s -> Completion? in
            guard let c = s.running.removeValue(forKey: id) else { return nil }
            s.calling += 1
            return c
        }) else { return }
        Self.call(completion, id: id, answer)
        returned.lock()
        state.withLock { $0.calling -= 1 }
        returned.broadcast()
        returned.unlock()
    }

    /// The instance is ending: every request still running completes now as cancelled.
    func cancelAll() {
        let left = state.withLock { s -> [(UInt64, Completion)] in
            s.ended = true
            defer { s.running.removeAll() }
            return s.running.sorted { $0.key < $1.key }
        }
        for (id, completion) in left {
            Self.call(completion, id: id, .failed("cancelled: the instance is ending before the request finished"))
        }
        // An answer that came just before: its callback may still be running on a host thread.
        // `destroy` comes after it returned (callbacks must not block: the wait is short; a
        // callback stuck for 10 s is given up on, as the host gives up on a hung hook).
        let deadline = Date(timeIntervalSinceNow: 10)
        returned.lock()
        while state.withLock({ $0.calling }) > 0, returned.wait(until: deadline) {}
        returned.unlock()
    }

    var runningCount: Int { state.withLock { $0.running.count } }

    /// Hands `answer` to the library as an `ah_http_response` that lives for the call.
    private static func call(_ completion: Completion, id: UInt64, _ answer: NativeHTTPAnswer) {
        var response = ah_http_response()
        response.size = UInt32(MemoryLayout<ah_http_response>.size)
        var strings: [UnsafeMutablePointer<CChar>] = []
        func keep(_ text: String) -> (UnsafePointer<CChar>, Int) {
            let copy = strdup(text)!
            strings.append(copy)
            return (UnsafePointer(copy), strlen(copy))
        }
        var headerTable: UnsafeMutablePointer<ah_http_header>?
        var body: [UInt8] = []
        switch answer {
        case .response(let status, let headers, let bytes):
            response.outcome = ah_status(AH_OK)
            response.status_code = Int32(clamping: status)
            if !headers.isEmpty {
                let table = UnsafeMutablePointer<ah_http_header>.allocate(capacity: headers.count)
                for (i, header) in headers.enumerated() {
                    let name = keep(header.name), value = keep(header.value)
                    (table + i).initialize(to: ah_http_header(name: name.0, name_len: name.1, value: value.0, value_len: value.1))
                }
                headerTable = table
                response.headers = UnsafePointer(table)
                response.header_count = headers.count
            }
            body = bytes
        case .failed(let why), .refused(let why):
            if case .failed = answer { response.outcome = ah_status(AH_ERR_RETRYABLE) } else { response.outcome = ah_status(AH_ERR_PERMANENT) }
            let error = keep(why)
            response.error = error.0
            response.error_len = error.1
        }
        defer {
            headerTable?.deallocate()
            for s in strings { free(s) }
        }
        body.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                response.body = chars.count == 0 ? nil : chars.baseAddress
                response.body_len = chars.count
                completion.done(completion.user, id, &response)
            }
        }
    }
}

extension HostExtensions {
    nonisolated(unsafe) static let httpRequests: UnsafePointer<ah_host_http_requests> = {
        let pointer = UnsafeMutablePointer<ah_host_http_requests>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_http_requests(size: UInt32(MemoryLayout<ah_host_http_requests>.size),
                                                     max_in_flight: UInt32(HTTPRequestsInFlight.maxInFlight),
                                                     start: httpRequestStart))
        return UnsafePointer(pointer)
    }()
}

extension NativeHTTPRequest {
    /// Why `url` cannot be requested, or nil when it is an http(s) URL with a host.
    static func problem(with url: String) -> String? {
        httpURL(url) == nil ? notHTTPURL(url) : nil
    }

    /// Copies a library's borrowed request; nil with the reason when it is unusable.
    static func copy(_ raw: UnsafeRawPointer) -> Result<NativeHTTPRequest, HostServiceError> {
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        let layout = MemoryLayout<ah_http_request>.size
        guard size >= layout else {
            return .failure(HostServiceError("ah_http_request.size is \(size) bytes, smaller than the \(AH_EXT_HTTP_REQUESTS) layout (\(layout) bytes)"))
        }
        let r = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_http_request())
        func text(_ p: UnsafePointer<CChar>?, _ n: Int) -> String {
            guard let p, n > 0 else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
        }
        if r.flags & ~UInt32(AH_HTTP_GZIP) != 0 { return .failure(HostServiceError("unknown ah_http_request.flags \(r.flags)")) }
        var method = text(r.method, r.method_len).uppercased()
        if method.isEmpty { method = "POST" }
        guard method.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else { return .failure(HostServiceError("method \"\(method)\" is not an HTTP method")) }
        let url = text(r.url, r.url_len)
        if let problem = problem(with: url) { return .failure(HostServiceError(problem)) }
        var headers: [NativeHTTPHeader] = []
        if r.header_count > 0 {
            guard let list = r.headers else { return .failure(HostServiceError("header_count is \(r.header_count) but headers is NULL")) }
            guard r.header_count <= 1000 else { return .failure(HostServiceError("\(r.header_count) headers (at most 1000)")) }
            for i in 0..<r.header_count {
                let h = list[i]
                let name = text(h.name, h.name_len)
                guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x3A || $0 >= 0x7F }) else {
                    return .failure(HostServiceError("header \(i) has no valid name"))
                }
                let value = text(h.value, h.value_len)
                guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) else {
                    return .failure(HostServiceError("the value of header \(name) holds a line break"))
                }
                headers.append(NativeHTTPHeader(name, value))
            }
        }
        var body: [UInt8] = []
        if r.body_len > 0 {
            guard let b = r.body else { return .failure(HostServiceError("body_len is \(r.body_len) but body is NULL")) }
            body = [UInt8](UnsafeRawBufferPointer(start: b, count: r.body_len))
        }
        return .success(NativeHTTPRequest(method: method, url: url, headers: headers, body: body,
                                          gzip: r.flags & UInt32(AH_HTTP_GZIP) != 0,
                                          timeout: r.timeout_ms == 0 ? 15 : Double(r.timeout_ms) / 1000))
    }
}

/// A host service's refusal, with the reason written to the library's `err`.
struct HostServiceError: Error, Sendable {
    let message: String
    init(_ message: String) { self.message = message }
}

private func httpRequestStart(_ ctx: UnsafeMutableRawPointer?, _ request: UnsafePointer<ah_http_request>,
                              _ done: ah_http_done_fn, _ user: UnsafeMutableRawPointer?, _ outId: UnsafeMutablePointer<UInt64>?,
                              _ err: UnsafeMutablePointer<CChar>?, _ errCap: Int) -> ah_status {
    guard let table = HostTable.from(ctx, "http_requests.start"), let http = table.services.http else {
        HostExtensions.write("this host offers no HTTP requests to this instance", into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let copied: NativeHTTPRequest
    switch NativeHTTPRequest.copy(UnsafeRawPointer(request)) {
    case .success(let r): copied = r
    case .failure(let e):
        HostExtensions.write(e.message, into: err, capacity: errCap)
        return ah_status(AH_ERR_PERMANENT)
    }
    let inFlight = table.httpRequestsInFlight
    let id: UInt64
    do throws(HTTPRequestsInFlight.StartError) {
        id = try inFlight.reserve(.init(done: done, user: user))
    } catch {
        switch error {
        case .busy(let why), .stopping(let why):
            HostExtensions.write(why, into: err, capacity: errCap)
            return ah_status(AH_ERR_RETRYABLE)
        }
    }
    outId?.pointee = id
    http.send(copied) { answer in inFlight.finish(id, answer) }
    return ah_status(AH_OK)
}
