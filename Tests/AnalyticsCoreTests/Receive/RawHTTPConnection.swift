import AnalyticsCore
import Foundation
import Glibc

/// A TCP connection to 127.0.0.1 that sends exactly the bytes a test gives (malformed, partial,
/// oversized) and reads answers with a deadline: what an abusive or broken client does, which a
/// real HTTP client library refuses to do.
final class RawHTTPConnection {
    let fd: Int32
    private var pending: [UInt8] = []

    struct Answer {
        var status: Int
        var statusLine: String
        var headers: [String: String]
        var body: String
        var json: JSON? { try? JSON(parsing: body) }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Connects; every read waits at most `timeout` seconds.
    init(port: Int, timeout: Double = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect: errno \(errno)")
        }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int(timeout.truncatingRemainder(dividingBy: 1) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends all of it; false when the peer is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// More bytes; nil at end of stream, error or timeout.
    private func receive() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let n = recv(fd, &chunk, chunk.count, 0)
        return n > 0 ? Array(chunk[0..<n]) : nil
    }

    /// The next response (head and Content-Length body); nil when the connection ended or went
    /// silent first.
    func answer() -> Answer? {
        while true {
            if let end = pending.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self)
                let lines = head.components(separatedBy: "\r\n")
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while pending.count < end.upperBound + length {
                    guard let more = receive() else { return nil }
                    pending += more
                }
                let body = String(decoding: pending[end.upperBound..<(end.upperBound + length)], as: UTF8.self)
                pending.removeSubrange(..<(end.upperBound + length))
                let parts = lines[0].split(separator: " ")
                return Answer(status: parts.count > 1 ? Int(parts[1]) ?? -1 : -1, statusLine: lines[0], headers: headers, body: body)
            }
            guard let more = receive() else { return nil }
            pending += more
        }
    }

    /// Whether the peer closes the connection (end of stream) before the read timeout; bytes it
    /// sends first are skipped.
    func closedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n > 0 { continue }
            return n == 0 || (n < 0 && errno == ECONNRESET)
        }
    }
}

extension RawHTTPConnection.Answer {
    /// `code` of a `{"code","message"}` refusal.
    var code: String? { json?["code"]?.stringValue }
    var message: String? { json?["message"]?.stringValue }
}
