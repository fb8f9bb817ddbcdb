import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// Inputs the fuzz targets (Tests/Fuzz, `make fuzz`) found, each kept as a test of the property it
/// broke, named after the target that found it.
@Suite struct FuzzRegressionTests {
    /// JSONRoundTrip: a number beyond the double range was read as infinity, which is written as
    /// `null`, so parse → encode → parse changed the value. It must be refused, or survive.
    @Test(arguments: ["4e3334", "8e555555555555555555555", "-1e309", #"{"n":[1e400]}"#])
    func jsonNumberBeyondTheDoubleRangeRoundTripsOrIsRefused(_ text: String) throws {
        let value: JSON
        do { value = try JSON(parsing: text) } catch {
            #expect(error.message.contains("number"))
            return
        }
        let encoded = value.serialized()
        #expect(try JSON(parsing: encoded) == value, "\(text) came back as \(encoded)")
    }

    /// QueueSegments: an older segment with no header and no intact record, set aside when read,
    /// left the acknowledged position on it, so `hasPendingEvents` stayed true after the queue was
    /// drained (a loop waiting for it would never end).
    @Test func drainedQueueHasNoPendingEventsAfterAnUnreadableSegmentIsSetAside() throws {
        let dir = QueueTestDirectory()
        let configuration = DurableQueue.Configuration(maxDiskBytes: 1 << 20, segmentBytes: 4096, maxRecordBytes: 4096)
        do {
            let queue = try DurableQueue(directory: dir.queuePath, configuration: configuration)
            try queue.append(queueTestEvent(0, size: 3000))
            try queue.append(queueTestEvent(1, size: 3000))
            try queue.close()
        }
        let segments = dir.segments()
        try #require(segments.count == 2)
        dir.write(segments[0], Array("AHQSEG".utf8) + [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x01] + Array("LLL".utf8))
        dir.write(segments[1], [])

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: configuration, onError: log.handler)
        #expect(try drainQueue(queue) == [])
        #expect(!queue.hasPendingEvents)
        #expect(log.all.contains { if case .corruptFile = $0 { return true } else { return false } })
        try queue.close()
    }

    /// NDJSONLineReader: a last line without "\n" kept its trailing "\r", so a stray "\r" at the
    /// end of a CRLF file was a rejected line (exit 1) where the same blank line anywhere else is
    /// skipped.
    @Test func aLastLineLosesItsCarriageReturnLikeEveryOtherLine() throws {
        let dir = makeTempDirectory("fuzz-crlf")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let input = "{\"type\":\"track\",\"event\":\"One\"}\r\n\r\n{\"type\":\"track\",\"event\":\"Two\"}\r\n\r"
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                        stdin: input, in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("2 events accepted, 0 rejected"))
    }

    /// HTTPRequestParser: a chunk size line of 7fffffffffffffff overflowed `size + 2` in the test
    /// server's request reader and trapped, taking the whole test process down. The request is
    /// now refused (413: over the body limit), the connection closed, and the server keeps serving.
    @Test func theTestServerRefusesAnAbsurdChunkSizeAndKeepsServing() throws {
        let server = try LoopbackHTTPServer()
        let request = "POST /v1/batch HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nhello\r\n0\r\n\r\n"
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        let bytes = Array(request.utf8)
        #expect(bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count)
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            answer += chunk[0..<n]
        }
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n") && text.contains(#""code":"payload_too_large""#), "\(text)")
        #expect(server.requestCount == 0)

        let client = HTTPClient()
        let response = try client.send(HTTPRequest(method: "POST", url: URL(string: server.baseURL + "/v1/batch")!, body: Array("{}".utf8))).get()
        #expect(response.status == 200)
        #expect(server.requestCount == 1)
    }
}
