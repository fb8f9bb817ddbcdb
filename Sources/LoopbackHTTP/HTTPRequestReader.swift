import Glibc

/// A request parsed off the wire.
struct ParsedHTTPRequest {
    var method: String
    var path: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// `Connection: close` (or HTTP/1.0 without keep-alive).
    var wantsClose: Bool
}

/// What the server holds a connection to: how large a request may be and how long it may take.
public struct HTTPLimits: Sendable {
    /// Largest request body on the wire, and largest once inflated (413 past it).
    public var maxBodyBytes: Int
    /// Largest request line plus headers (431 past it).
    public var maxHeadBytes: Int
    /// Seconds a connection may stay silent (between requests, or inside one) before it is closed.
    public var idleTimeout: Double
    /// Seconds a request may take to arrive, from its first byte to its body's last (408 past it):
    /// a client trickling a byte at a time cannot hold a connection longer than this.
    public var requestTimeout: Double

    public init(maxBodyBytes: Int = 4 << 20, maxHeadBytes: Int = 64 * 1024, idleTimeout: Double = 30, requestTimeout: Double = 60) {
        self.maxBodyBytes = maxBodyBytes
        self.maxHeadBytes = maxHeadBytes
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
    }
}

/// Why a connection ends without a request to answer normally.
enum HTTPReadEnd: Equatable {
    /// The peer closed, or stayed silent past the idle timeout, between requests: nothing to answer.
    case closed
    /// The request cannot be taken: answer this and close the connection.
    case refused(status: Int, code: String, message: String)
}

/// Reads HTTP/1.1 requests from a socket, one after another on a keep-alive connection, within
/// ``HTTPLimits``. Bodies are framed by Content-Length or chunked transfer encoding.
struct HTTPRequestReader {
    let fd: Int32
    let limits: HTTPLimits
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    /// Monotonic deadline of the request being read (set at its first byte), and whether the last
    /// `fill()` failed for silence rather than end of stream.
    private var requestDeadline: Double?
    private var timedOut = false

    init(fd: Int32, limits: HTTPLimits = HTTPLimits()) {
        self.fd = fd
        self.limits = limits
    }

    /// The next request; nil when the peer closed or sent something unreadable (see ``read()``).
    mutating func next() -> ParsedHTTPRequest? {
        if case .success(let request) = read() { return request }
        return nil
    }

    /// The next request, or why there is none.
    mutating func read() -> Result<ParsedHTTPRequest, ReadEndError> {
        requestDeadline = buffer.count > start ? now() + limits.requestTimeout : nil
        var scanFrom = start
        var headEnd: Int?
        while headEnd == nil {
            headEnd = findHeadEnd(from: scanFrom)
            if headEnd == nil {
                scanFrom = max(start, buffer.count - 3)
                if buffer.count - start > limits.maxHeadBytes {
                    return refuse(431, "headers_too_large", "request line and headers exceed \(limits.maxHeadBytes) bytes")
                }
                guard fill() else { return ended(midRequest: buffer.count > start) }
            }
        }
        if headEnd! - start > limits.maxHeadBytes {
            return refuse(431, "headers_too_large", "request line and headers exceed \(limits.maxHeadBytes) bytes")
        }
        let head = String(decoding: buffer[start..<headEnd!], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return refuse(400, "invalid_request", "empty request") }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, !requestLine[1].isEmpty,
              requestLine[0].utf8.allSatisfy({ (65...90).contains($0) }) else {
            return refuse(400, "invalid_request", "malformed request line (expected METHOD /path HTTP/1.1)")
        }
        let version = requestLine[2]
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return refuse(505, "http_version_not_supported", "HTTP/1.0 and HTTP/1.1 only")
        }
        var headers: [(name: String, value: String)] = []
        var contentLength: Int?
        var chunked = false
        var expectContinue = false
        var connection = ""
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                return refuse(400, "invalid_request", "malformed header line")
            }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...]).trimmingSpaces()
            headers.append((name, value))
            switch name.lowercased() {
            case "content-length":
                guard let n = Int(value), n >= 0, contentLength == nil || contentLength == n else {
                    return refuse(400, "invalid_request", "invalid Content-Length")
                }
                contentLength = n
            case "transfer-encoding": chunked = value.lowercased().contains("chunked")
            case "expect": expectContinue = value.lowercased() == "100-continue"
            case "connection": connection = value.lowercased()
            default: break
            }
        }
        if let contentLength, !chunked, contentLength > limits.maxBodyBytes {
            return refuse(413, "payload_too_large", "body of \(contentLength) bytes is over the limit of \(limits.maxBodyBytes)")
        }
        start = headEnd! + 4
        if expectContinue {
            guard sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return .failure(ReadEndError(.closed)) }
        }
        var body: [UInt8]
        if chunked {
            switch readChunked() {
            case .success(let b): body = b
            case .failure(let end): return .failure(end)
            }
        } else {
            let length = contentLength ?? 0
            while buffer.count - start < length {
                guard fill() else { return ended(midRequest: true) }
            }
            body = Array(buffer[start..<(start + length)])
            start += length
        }
        compact()
        let wantsClose = connection == "close" || (version == "HTTP/1.0" && connection != "keep-alive")
        return .success(ParsedHTTPRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
                                          body: body, wantsClose: wantsClose))
    }

    /// ``HTTPReadEnd`` as an error, for `Result`.
    struct ReadEndError: Error, Equatable {
        let end: HTTPReadEnd
        init(_ end: HTTPReadEnd) { self.end = end }
    }

    private func refuse(_ status: Int, _ code: String, _ message: String) -> Result<ParsedHTTPRequest, ReadEndError> {
        .failure(ReadEndError(.refused(status: status, code: code, message: message)))
    }

    /// The stream ended: in the middle of a request because it went silent, 408; else closed.
    private func ended(midRequest: Bool) -> Result<ParsedHTTPRequest, ReadEndError> {
        if midRequest && timedOut {
            return refuse(408, "request_timeout", "the request did not arrive within the time allowed")
        }
        return .failure(ReadEndError(.closed))
    }

    private mutating func readChunked() -> Result<[UInt8], ReadEndError> {
        var body: [UInt8] = []
        while true {
            guard let line = readLine() else { return .failure(ended(midRequest: true).endError) }
            let sizeText = line.split(separator: ";").first.map(String.init)?.trimmingSpaces() ?? ""
            guard let size = Int(sizeText, radix: 16), size >= 0 else {
                return .failure(ReadEndError(.refused(status: 400, code: "invalid_request", message: "malformed chunk size")))
            }
            guard size <= limits.maxBodyBytes - body.count else {
                return .failure(ReadEndError(.refused(status: 413, code: "payload_too_large",
                                                      message: "chunked body over the limit of \(limits.maxBodyBytes) bytes")))
            }
            if size == 0 {
                // Trailers until an empty line.
                while let t = readLine() { if t.isEmpty { return .success(body) } }
                return .failure(ended(midRequest: true).endError)
            }
            while buffer.count - start < size + 2 {
                guard fill() else { return .failure(ended(midRequest: true).endError) }
            }
            body.append(contentsOf: buffer[start..<(start + size)])
            start += size + 2
        }
    }

    private mutating func readLine() -> String? {
        while true {
            if let i = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = i
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = i + 1
                return line
            }
            if buffer.count - start > limits.maxHeadBytes { return nil }  // a line without end
            guard fill() else { return nil }
        }
    }

    private func findHeadEnd(from: Int) -> Int? {
        buffer.withUnsafeBufferPointer { b in
            var i = max(from, start)
            while i + 3 < b.count {
                if b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
                i += 1
            }
            return nil
        }
    }

    private func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Reads more bytes; false on end of stream, error, or silence past the idle timeout or the
    /// request's deadline (then `timedOut` is set).
    private mutating func fill() -> Bool {
        timedOut = false
        let idleDeadline = now() + limits.idleTimeout
        while true {
            let wait = min(idleDeadline, requestDeadline ?? idleDeadline) - now()
            guard wait > 0 else {
                timedOut = true
                return false
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(wait * 1000, Double(Int32.max)).rounded(.up)))
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            if ready == 0 { continue }  // the loop decides whether time is up
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                if requestDeadline == nil { requestDeadline = now() + limits.requestTimeout }
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            return false
        }
    }

    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
        } else if start > 512 * 1024 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}

private extension Result where Success == ParsedHTTPRequest, Failure == HTTPRequestReader.ReadEndError {
    var endError: HTTPRequestReader.ReadEndError {
        if case .failure(let e) = self { return e }
        return HTTPRequestReader.ReadEndError(.closed)
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
