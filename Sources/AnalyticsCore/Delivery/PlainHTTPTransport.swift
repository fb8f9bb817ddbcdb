import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// HTTP/1.1 over a plain TCP socket, blocking, for `http://` URLs: one kept-alive connection per
/// host and port, the request written with one `writev`, the response read into one buffer.
///
/// Why not URLSession for these: on Linux it drives libcurl from Dispatch sources, and once a
/// request's body is written its socket's write source stays armed while curl waits only to read,
/// so the always-writable socket wakes a Dispatch thread, the manager thread and curl over and
/// over until the answer comes: a busy loop of `epoll_wait`/`eventfd`/`poll` calls for the whole
/// time the server takes to answer (measured: one request a server answers in 2 s cost 1.0–1.3 s
/// of CPU, mostly system time). An upload thread that waits in `poll` costs nothing while it waits.
/// `https://` still goes through URLSession (TLS); see docs/benchmarks.md.
final class PlainHTTPTransport: @unchecked Sendable {
    /// A kept-alive connection: its socket and the endpoint it is connected to.
    private struct Connection {
        var fd: Int32
        var endpoint: String
    }

    private let lock = NSLock()
    /// Idle connections, at most one per endpoint (the uploader sends one request at a time).
    private var idle: [Connection] = []
    /// Largest response accepted (headers and body): answers here are short JSON.
    static let maxResponseBytes = 4 << 20

    deinit {
        for c in idle { close(c.fd) }
    }

    /// Sends `request` (an `http://` URL) and waits for the whole response, at most
    /// `request.timeout` seconds in all.
    func send(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPClientError> {
        let urlText = request.url.absoluteString
        guard let host = request.url.host, !host.isEmpty else {
            return .failure(.network(url: urlText, reason: "no host in the URL"))
        }
        let port = request.url.port ?? 80
        let endpoint = "\(host):\(port)"
        let deadline = monotonicSeconds() + max(0.001, request.timeout)
        let head = Self.head(request, host: host, port: port)

        // A kept-alive connection the server may have closed meanwhile: when it fails before any
        // byte of an answer, the request goes again once on a new connection.
        if let reused = takeIdle(endpoint) {
            switch exchange(reused, head: head, body: request.body, deadline: deadline, limit: request.timeout, url: urlText, reused: true) {
            case .retryOnNewConnection: break
            case .done(let result): return result
            }
        }
        let fd: Int32
        switch Self.connect(host: host, port: port, deadline: deadline, timeout: request.timeout, url: urlText) {
        case .failure(let e): return .failure(e)
        case .success(let s): fd = s
        }
        switch exchange(Connection(fd: fd, endpoint: endpoint), head: head, body: request.body, deadline: deadline, limit: request.timeout, url: urlText, reused: false) {
        case .retryOnNewConnection: return .failure(.network(url: urlText, reason: "the server closed the connection without answering"))
        case .done(let result): return result
        }
    }

    private enum Exchange {
        case done(Result<HTTPResponse, HTTPClientError>)
        case retryOnNewConnection
    }

    private func takeIdle(_ endpoint: String) -> Connection? {
        lock.lock()
        defer { lock.unlock() }
        guard let i = idle.firstIndex(where: { $0.endpoint == endpoint }) else { return nil }
        return idle.remove(at: i)
    }

    private func putIdle(_ c: Connection) {
        lock.lock()
        if let i = idle.firstIndex(where: { $0.endpoint == c.endpoint }) {
            close(idle[i].fd)
            idle[i] = c
        } else {
            idle.append(c)
        }
        lock.unlock()
    }

    /// The request line and headers (Host, Content-Length and keep-alive added).
    static func head(_ request: HTTPRequest, host: String, port: Int) -> [UInt8] {
        var path = request.url.path.isEmpty ? "/" : request.url.path
        if let query = request.url.query { path += "?" + query }
        var text = "\(request.method) \(path) HTTP/1.1\r\nHost: \(host)\(port == 80 ? "" : ":\(port)")\r\n"
        for (name, value) in request.headers {
                // A line break would break the framing: such a header is left out.
            if name.contains(where: { $0 == "\r" || $0 == "\n" }) || value.contains(where: { $0 == "\r" || $0 == "\n" }) { continue }
            text += "\(name): \(value)\r\n"
        }
        if let body = request.body { text += "Content-Length: \(body.count)\r\n" }
        text += "Connection: keep-alive\r\n\r\n"
        return Array(text.utf8)
    }

    private static func connect(host: String, port: Int, deadline: Double, timeout: Double, url: String) -> Result<Int32, HTTPClientError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(.network(url: url, reason: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(list) }
        var problem = "no address"
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let ai = next {
            next = ai.pointee.ai_next
            let fd = socket(ai.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { problem = String(cString: strerror(errno)); continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 { return .success(fd) }
            guard errno == EINPROGRESS else { problem = String(cString: strerror(errno)); close(fd); continue }
            switch wait(fd, for: Int16(POLLOUT), deadline: deadline) {
            case .ready:
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error == 0 { return .success(fd) }
                problem = String(cString: strerror(error))
                close(fd)
            case .timedOut:
                close(fd)
                return .failure(.timedOut(url: url, after: timeout))
            case .failed(let e):
                problem = String(cString: strerror(e))
                close(fd)
            }
        }
        return .failure(.network(url: url, reason: "cannot connect to \(host):\(port): \(problem)"))
    }

    private enum Readiness { case ready, timedOut, failed(Int32) }

    private static func wait(_ fd: Int32, for events: Int16, deadline: Double) -> Readiness {
        while true {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return .timedOut }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
            if n > 0 { return .ready }
            if n < 0 && errno != EINTR { return .failed(errno) }
        }
    }

    /// One request on `c`; `limit` is the request's timeout, reported when it passes.
    private func exchange(_ c: Connection, head: [UInt8], body: [UInt8]?, deadline: Double, limit: Double, url: String, reused: Bool) -> Exchange {
        let timeout = { (_: Double) -> Exchange in
            close(c.fd)
            return .done(.failure(.timedOut(url: url, after: limit)))
        }
        let started = monotonicSeconds()
        // Write the head and the body, one writev while the socket takes it all.
        var written = 0
        var writeError: Int32?
        let total = head.count + (body?.count ?? 0)
        while written < total {
            let n = head.withUnsafeBytes { h in
                (body ?? []).withUnsafeBytes { b -> Int in
                    var parts = [iovec]()
                    if written < h.count {
                        parts.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: h.baseAddress! + written), iov_len: h.count - written))
                        if b.count > 0 { parts.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress!), iov_len: b.count)) }
                    } else {
                        let offset = written - h.count
                        parts.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress! + offset), iov_len: b.count - offset))
                    }
                    var message = msghdr()
                    return parts.withUnsafeMutableBufferPointer { iov in
                        message.msg_iov = iov.baseAddress
                        message.msg_iovlen = iov.count
                        return sendmsg(c.fd, &message, Int32(MSG_NOSIGNAL))
                    }
                }
            }
            if n >= 0 { written += n; continue }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                switch Self.wait(c.fd, for: Int16(POLLOUT), deadline: deadline) {
                case .ready: continue
                case .timedOut: return timeout(monotonicSeconds() - started)
                case .failed(let e): close(c.fd); return .done(.failure(.network(url: url, reason: String(cString: strerror(e)))))
                }
            }
            // The server may have answered before it read everything (a 413 for a body over its
            // limit) and closed: that answer is read below; without one, this error is reported.
            writeError = errno
            if reused && written == 0 {
                close(c.fd)
                return .retryOnNewConnection
            }
            break
        }

        // Read the answer: headers, then the body by Content-Length, chunks, or until close.
        var buffer = [UInt8]()
        buffer.reserveCapacity(4096)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var eof = false
        func fill() -> Exchange? {
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, 0) }
                if n > 0 {
                    buffer.append(contentsOf: chunk[0..<n])
                    if buffer.count > Self.maxResponseBytes {
                        close(c.fd)
                        return .done(.failure(.network(url: url, reason: "response over \(Self.maxResponseBytes) bytes")))
                    }
                    return nil
                }
                if n == 0 { eof = true; return nil }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    switch Self.wait(c.fd, for: Int16(POLLIN), deadline: deadline) {
                    case .ready: continue
                    case .timedOut: return timeout(monotonicSeconds() - started)
                    case .failed(let e): close(c.fd); return .done(.failure(.network(url: url, reason: String(cString: strerror(e)))))
                    }
                }
                let reason = String(cString: strerror(writeError ?? errno))
                close(c.fd)
                if reused && buffer.isEmpty && writeError == nil { return .retryOnNewConnection }
                return .done(.failure(.network(url: url, reason: "\(writeError == nil ? "reading the response" : "sending the request"): \(reason)")))
            }
        }
        var headEnd: Int?
        while headEnd == nil {
            if let stop = fill() { return stop }
            headEnd = Self.find([13, 10, 13, 10], in: buffer)
            if eof && headEnd == nil {
                close(c.fd)
                if reused && buffer.isEmpty && writeError == nil { return .retryOnNewConnection }
                let reason = writeError.map { "sending the request: " + String(cString: strerror($0)) }
                return .done(.failure(.network(url: url, reason: reason ?? "the connection closed before a complete response")))
            }
        }
        guard let end = headEnd, let parsed = Self.parseHead(buffer[0..<end]) else {
            close(c.fd)
            return .done(.failure(.network(url: url, reason: "malformed HTTP response")))
        }
        var body: [UInt8]
        var keepAlive = parsed.keepAlive
        let bodyStart = end + 4
        if parsed.status == 204 || parsed.status == 304 || (100..<200).contains(parsed.status) {
            body = []
        } else if parsed.chunked {
            var decoded: [UInt8] = []
            var position = bodyStart
            while true {
                guard let lineEnd = Self.find([13, 10], in: buffer, from: position) else {
                    if eof { close(c.fd); return .done(.failure(.network(url: url, reason: "truncated chunked response"))) }
                    if let stop = fill() { return stop }
                    continue
                }
                let sizeText = String(decoding: buffer[position..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0, size <= Self.maxResponseBytes else {
                    close(c.fd)
                    return .done(.failure(.network(url: url, reason: "malformed chunked response")))
                }
                if size == 0 {
                    // No trailers: an empty line follows at once; else trailers end with one.
                    while buffer.count < lineEnd + 4 || (buffer[lineEnd + 2] != 13 || buffer[lineEnd + 3] != 10)
                            && Self.find([13, 10, 13, 10], in: buffer, from: lineEnd) == nil {
                        if eof { close(c.fd); return .done(.failure(.network(url: url, reason: "truncated chunked response"))) }
                        if let stop = fill() { return stop }
                    }
                    break
                }
                while buffer.count < lineEnd + 2 + size + 2 {
                    if eof { close(c.fd); return .done(.failure(.network(url: url, reason: "truncated chunked response"))) }
                    if let stop = fill() { return stop }
                }
                decoded.append(contentsOf: buffer[(lineEnd + 2)..<(lineEnd + 2 + size)])
                position = lineEnd + 2 + size + 2
            }
            body = decoded
        } else if let length = parsed.contentLength {
            guard length <= Self.maxResponseBytes else {
                close(c.fd)
                return .done(.failure(.network(url: url, reason: "response over \(Self.maxResponseBytes) bytes")))
            }
            while buffer.count < bodyStart + length {
                if eof {
                    close(c.fd)
                    return .done(.failure(.network(url: url, reason: "the connection closed before the whole response body")))
                }
                if let stop = fill() { return stop }
            }
            body = Array(buffer[bodyStart..<(bodyStart + length)])
        } else {
            // No length: the body ends when the server closes the connection.
            while !eof { if let stop = fill() { return stop } }
            body = Array(buffer[bodyStart...])
            keepAlive = false
        }
        if keepAlive && !eof && writeError == nil {
            putIdle(c)
        } else {
            close(c.fd)
        }
        return .done(.success(HTTPResponse(status: parsed.status, headers: parsed.headers, body: body)))
    }

    /// Status, headers (names lower-cased), framing and whether the connection stays open.
    static func parseHead(_ bytes: ArraySlice<UInt8>) -> (status: Int, headers: [String: String], contentLength: Int?, chunked: Bool, keepAlive: Bool)? {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = lines.first else { return nil }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...999).contains(status) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        let connection = headers["connection"]?.lowercased() ?? ""
        let keepAlive = parts[0] == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        let chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false
        var length: Int?
        if !chunked, let text = headers["content-length"] {
            guard let n = Int(text.trimmingCharacters(in: .whitespaces)), n >= 0 else { return nil }
            length = n
        }
        return (status, headers, length, chunked, keepAlive)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            var match = true
            for j in 0..<needle.count where haystack[i + j] != needle[j] { match = false; break }
            if match { return i }
            i += 1
        }
        return nil
    }
}
