// The receiver's whole request path (`analytics-host receive`): the loopback server's connection
// code under its limits (body cap, header cap, inflate budget), gzip inflating, and the Segment
// collector's checks (write key, 32 KB / 500 KB / 2,500 events / nesting, sentAt and type added).
// The first two input bytes pick the limits (bodies from 64 bytes up, so that every cap is hit);
// the rest is sent down a socket pair whose write side is then shut, and the server serves that
// connection on this thread until it ends. Properties: no crash, no hang; every answer is
// well-formed HTTP with a known status, every refusal a JSON {code, message}; no body handed on is
// over the cap; every event taken is a JSON object within the nesting limit, with a type when it
// came to a single-call endpoint; the inflate budget is whole again once the connection ends.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/HTTP.dict -max_len=16384 -timeout=10
@testable import LoopbackHTTP
import AnalyticsCore
import Glibc

/// One server per limits class (creating one per input would cost a listening socket each time).
nonisolated(unsafe) private var servers: [Int: LoopbackHTTPServer] = [:]

private func server(for selector: UInt8, headSelector: UInt8) -> LoopbackHTTPServer {
    let key = Int(selector % 16) * 16 + Int(headSelector % 4)
    if let s = servers[key] { return s }
    let limits = HTTPLimits(maxBodyBytes: 64 << Int(selector % 16), maxHeadBytes: 256 << Int(headSelector % 4),
                            idleTimeout: 5, requestTimeout: 5)
    let collector = SegmentCollector(writeKey: selector & 0x80 != 0 ? "key" : nil)
    do {
        let s = try LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, respond: { request in
            fuzzCheck(request.body.count <= limits.maxBodyBytes, "a body of \(request.body.count) bytes passed the cap of \(limits.maxBodyBytes)")
            switch collector.take(request) {
            case .failure(let refusal):
                fuzzCheck([400, 401, 404, 405].contains(refusal.status), "collector refused with \(refusal.status)")
                return refusal.response
            case .success(let accepted):
                for line in accepted.lines {
                    guard case .object(let event)? = try? JSON(parsing: line) else { fuzzFail("an accepted line is not a JSON object") }
                    fuzzCheck(!JSON.object(event).nests(deeperThan: BatchLimits.maxEventDepth), "an accepted event is nested too deep")
                    if SegmentCollector.singleTypes[accepted.path] != nil { fuzzCheck(event["type"] != nil, "a single call without type") }
                }
                return nil
            }
        }, limits: limits, maxConnections: 4, inflateBudgetBytes: limits.maxBodyBytes + 1, inflateBudgetWait: 0))
        servers[key] = s
        return s
    } catch {
        fuzzFail("cannot start the server: \(error)")
    }
}

/// The answers in `bytes`, checked one after another.
private func checkAnswers(_ bytes: [UInt8]) {
    var rest = bytes[...]
    let known: Set<Int> = [100, 200, 400, 401, 404, 405, 408, 413, 431, 503, 505]
    while !rest.isEmpty {
        guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else { fuzzFail("an answer without the end of its head") }
        let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) }
        guard let status, lines[0].hasPrefix("HTTP/1.1 ") else { fuzzFail("a malformed status line: \(lines.first ?? "")") }
        fuzzCheck(known.contains(status), "unexpected status \(status)")
        var length = 0
        for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
            length = Int(String(line.dropFirst("content-length:".count)).trimmingSpaces()) ?? -1
        }
        fuzzCheck(length >= 0 && rest.count >= end.upperBound - rest.startIndex + length, "a body shorter than its Content-Length")
        let body = Array(rest[end.upperBound..<(end.upperBound + length)])
        if status >= 400 {
            guard case .object(let o)? = try? JSON(parsing: body), o["code"]?.stringValue != nil, o["message"]?.stringValue != nil else {
                fuzzFail("a \(status) refusal without {code, message}: \(String(decoding: body, as: UTF8.self))")
            }
        }
        rest = rest[(end.upperBound + length)...]
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceiverRequests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size >= 2, let data else { return 0 }
    let server = server(for: data[0], headSelector: data[1])
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { fuzzFail("socketpair: errno \(errno)") }
    defer { close(fds[1]) }
    var bufferSize: Int32 = 4 << 20
    for fd in fds {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
    }
    var sent = 2
    while sent < size {
        let n = send(fds[1], data + sent, size - sent, Int32(MSG_NOSIGNAL))
        guard n > 0 else { fuzzFail("send: errno \(errno)") }
        sent += n
    }
    shutdown(fds[1], Int32(SHUT_WR))
    server.serveOnThisThread(fds[0])  // closes fds[0]

    var answers: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let n = recv(fds[1], &chunk, chunk.count, Int32(MSG_DONTWAIT))
        if n <= 0 { break }
        answers += chunk[0..<n]
    }
    checkAnswers(answers)
    fuzzCheck(server.inflateBudget.free == server.inflateBudget.total, "the inflate budget was not given back")
    return 0
}
