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

/// Reads HTTP/1.1 requests from a socket, one after another on a keep-alive connection.
/// Bodies are framed by Content-Length or chunked transfer encoding.
struct HTTPRequestReader {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 256 * 1024)

    init(fd: Int32) {
        self.fd = fd
        buffer.reserveCapacity(1 << 20)
    }

    /// The next request; nil when the peer closed or sent something unreadable.
    mutating func next() -> ParsedHTTPRequest? {
        var scanFrom = start
        var headEnd: Int?
        while headEnd == nil {
            headEnd = findHeadEnd(from: scanFrom)
            if headEnd == nil {
                scanFrom = max(start, buffer.count - 3)
                if buffer.count - start > 64 * 1024 { return nil }  // absurd head
                guard fill() else { return nil }
            }
        }
        let head = String(decoding: buffer[start..<headEnd!], as: UTF8.self)
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 3 else { return nil }
        var headers: [(name: String, value: String)] = []
        var contentLength = 0
        var chunked = false
        var expectContinue = false
        var connection = ""
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...]).trimmingSpaces()
            headers.append((name, value))
            switch name.lowercased() {
            case "content-length": contentLength = Int(value) ?? -1
            case "transfer-encoding": chunked = value.lowercased().contains("chunked")
            case "expect": expectContinue = value.lowercased() == "100-continue"
            case "connection": connection = value.lowercased()
            default: break
            }
        }
        guard contentLength >= 0 else { return nil }
        start = headEnd! + 4
        if expectContinue {
            guard sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        var body: [UInt8]
        if chunked {
            guard let b = readChunked() else { return nil }
            body = b
        } else {
            while buffer.count - start < contentLength {
                guard fill() else { return nil }
            }
            body = Array(buffer[start..<(start + contentLength)])
            start += contentLength
        }
        compact()
        let version = requestLine[2]
        let wantsClose = connection == "close" || (version == "HTTP/1.0" && connection != "keep-alive")
        return ParsedHTTPRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
                                 body: body, wantsClose: wantsClose)
    }

    private mutating func readChunked() -> [UInt8]? {
        var body: [UInt8] = []
        while true {
            guard let line = readLine() else { return nil }
            let sizeText = line.split(separator: ";").first.map(String.init)?.trimmingSpaces() ?? ""
            // Bounded so that `size + 2` below cannot overflow on a hostile size line.
            guard let size = Int(sizeText, radix: 16), size >= 0, size <= 1 << 40 else { return nil }
            if size == 0 {
                // Trailers until an empty line.
                while let t = readLine() { if t.isEmpty { return body } }
                return nil
            }
            while buffer.count - start < size + 2 {
                guard fill() else { return nil }
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

    /// Reads more bytes; false on EOF or error.
    private mutating func fill() -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n < 0 && errno == EINTR { continue }
            return false
        }
    }

    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 512 * 1024 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
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
