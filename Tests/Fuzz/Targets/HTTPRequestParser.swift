// The one HTTP parser in this repository: the loopback test server's request reader
// (Sources/LoopbackHTTP/HTTPRequestReader.swift, also `analytics-host receive`'s). Uploads go through URLSession, so
// libcurl parses responses and no response parser of ours exists.
// The input is sent down a socket pair, the write side is shut, and the reader takes requests
// until it gives up. Properties: no crash, no hang; each request consumes input, so the count is
// bounded by the input size; a body framed by Content-Length has that length.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/HTTP.dict -max_len=8192 -timeout=10
@testable import LoopbackHTTP
import Glibc

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequestParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { fuzzFail("socketpair: errno \(errno)") }
    defer { close(fds[0]); close(fds[1]) }
    var bufferSize: Int32 = 1 << 20
    setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
    var sent = 0
    while sent < size {
        let n = send(fds[1], data! + sent, size - sent, Int32(MSG_NOSIGNAL))
        guard n > 0 else { fuzzFail("send: errno \(errno)") }
        sent += n
    }
    shutdown(fds[1], Int32(SHUT_WR))

    var reader = HTTPRequestReader(fd: fds[0])
    var requests = 0
    while let request = reader.next() {
        requests += 1
        fuzzCheck(requests * 4 <= size, "\(requests) requests out of \(size) bytes")
        fuzzCheck(!request.method.isEmpty && !request.path.isEmpty, "a request without method or path")
        let chunked = request.headers.contains { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().contains("chunked") }
        if !chunked, let length = request.headers.last(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }) {
            fuzzCheck(request.body.count == length, "Content-Length \(length), body of \(request.body.count) bytes")
        }
    }
    return 0
}
