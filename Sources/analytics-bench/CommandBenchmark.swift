import AnalyticsCore
import AnalyticsTestSupport
import Foundation

/// `analytics-host run` on `lines` track lines against a slow loopback server (20 ms per answer)
/// with a small disk cap (256 KiB, far below the input): reading must slow down to the upload rate
/// and drop nothing. Returns lines/s from start to exit, how many events the server received
/// (distinct messageIds), and the exit status. Needs the release `analytics-host` next to this binary.
func commandBenchmark(lines n: Int) -> (linesPerSecond: Double, received: Int, status: Int32) {
    let dir = NSTemporaryDirectory() + "analytics-bench-command-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try? FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
    let host = (CommandLine.arguments[0] as NSString).deletingLastPathComponent + "/analytics-host"
    guard FileManager.default.isExecutableFile(atPath: host) else {
        FileHandle.standardError.write(Data("analytics-bench: \(host) missing (make bench builds it)\n".utf8))
        return (0, 0, -1)
    }
    let seen = Locked<[Bool]>([Bool](repeating: false, count: n))
    guard let server = try? LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, onRequest: { request in
        usleep(20_000)
        guard case .object(let body)? = try? JSON(parsing: request.body) else { return }
        let ids = (body["batch"]?.arrayValue ?? []).compactMap { $0["messageId"]?.stringValue }
        seen.withLock { flags in
            for id in ids { if let i = Int(id.dropFirst(2)), i < flags.count { flags[i] = true } }
        }
    })) else { return (0, 0, -1) }
    defer { server.stop() }
    let settings = dir + "/settings.json"
    try? #"{"integrations":{"Segment.io":{"apiKey":"k","apiHost":"\#(server.baseURL)/v1"}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
    let input = dir + "/input.ndjson"
    _ = FileManager.default.createFile(atPath: input, contents: nil)
    if let handle = FileHandle(forWritingAtPath: input) {
        var chunk = ""
        for i in 0..<n {
            chunk += #"{"type":"track","event":"Bench","userId":"u","messageId":"m-\#(i)","properties":{"i":\#(i)}}"# + "\n"
            if chunk.utf8.count > 1 << 20 { handle.write(Data(chunk.utf8)); chunk = "" }
        }
        handle.write(Data(chunk.utf8))
        try? handle.close()
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: host)
    process.arguments = ["run", "--settings", settings, "--plugins", dir + "/plugins", "--storage", dir + "/s", "--input", input,
                         "--max-queue-bytes", String(256 << 10), "--quiet"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let start = monotonicSeconds()
    do { try process.run() } catch { return (0, 0, -1) }
    process.waitUntilExit()
    let elapsed = monotonicSeconds() - start
    return (Double(n) / elapsed, seen.withLock { $0.filter { $0 }.count }, process.terminationStatus)
}
