import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `analytics-host run` against a real loopback Segment server: a run drains (this run's events and
/// earlier runs' backlog, with retries, backoff and Retry-After), counts honestly, and exits with
/// the status that tells apart all delivered / rejected by the server / still queued.
@Suite(.serialized) struct RunDrainTests {
    /// A settings file naming only Segment.io at `server`, with a fast backoff (0.1 s first wait).
    static func settings(in dir: String, port: UInt16, name: String = "settings.json") throws -> String {
        let path = dir + "/" + name
        try #"{"integrations":{"Segment.io":{"apiKey":"k","apiHost":"http://127.0.0.1:\#(port)/v1","httpConfig":{"backoffConfig":{"baseBackoffInterval":0.1,"jitterPercent":0}}}}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func lines(_ range: Range<Int>, prefix: String = "m") -> String {
        var text = ""
        for i in range { text += #"{"type":"track","event":"E","messageId":"\#(prefix)-\#(i)","properties":{"i":\#(i)}}"# + "\n" }
        return text
    }

    static func run(_ extra: [String], settings: String, storage: String, stdin: String? = nil, in dir: String) throws -> FixtureBuilder.ProcessOutput {
        let plugins = dir + "/no-plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        return try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", storage, "--quiet"] + extra,
                                  stdin: stdin, in: dir)
    }

    /// Issue item 10: 500 to the first 3 batches, then 200 — one run delivers everything.
    @Test func aShortOutageIsRiddenOutInOneRun() throws {
        let dir = makeTempDirectory("drain-outage")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(500, body: "boom"), times: 3)
        let result = try Self.run([], settings: try Self.settings(in: dir, port: server.port), storage: dir + "/s",
                                  stdin: Self.lines(0..<10_000), in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let received = try server.messageIds()
        #expect(Set(received) == Set((0..<10_000).map { "m-\($0)" }), "everything delivered in this run")
        #expect(result.stdout.contains("10000 uploaded"), "\(result.stdout)")
        #expect(result.stdout.contains("0 still queued"))
        #expect(result.stdout.contains("last failed upload: HTTP 500"), "where and why, not 'no answer': \(result.stdout)")
        #expect(!result.stdout.contains("no answer"))
        let retries = try server.requests.prefix(4).map { try #require($0.header("X-Retry-Count")) }
        #expect(retries == ["0", "1", "2", "3"], "the same batch, one more attempt each time")
    }

    /// 429 with `Retry-After: 1`: the run waits that second and then delivers.
    @Test func retryAfterIsHonoured() throws {
        let dir = makeTempDirectory("drain-429")
        let times = Locked<[Double]>([])
        let server = try LoopbackHTTPServer(options: .init(onRequest: { _ in times.withLock { $0.append(monotonicSeconds()) } }))
        defer { server.stop() }
        server.enqueue(.status(429, headers: [("Retry-After", "1")]))
        let result = try Self.run([], settings: try Self.settings(in: dir, port: server.port), storage: dir + "/s",
                                  stdin: Self.lines(0..<100), in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(Set(try server.messageIds()) == Set((0..<100).map { "m-\($0)" }))
        let t = times.withLock { $0 }
        #expect(t.count >= 2 && t[1] - t[0] >= 0.95, "the second attempt waited for Retry-After: \(t)")
        #expect(server.requests.map { $0.header("X-Retry-Count") ?? "?" }.prefix(2) == ["0", "1"])
    }

    /// A server that refuses everything (400): each batch is split down to single events, which
    /// are dropped for good, reported, and the exit status says so (5).
    @Test func aServerRefusalExitsFive() throws {
        let dir = makeTempDirectory("drain-400")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.defaultResponse = .status(400, body: "malformed")
        let result = try Self.run([], settings: try Self.settings(in: dir, port: server.port), storage: dir + "/s",
                                  stdin: Self.lines(0..<1_000), in: dir)
        #expect(result.status == 5, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("1000 rejected by the server"), "\(result.stdout)")
        #expect(result.stdout.contains("last failed upload: HTTP 400: malformed"))
        #expect(result.stderr.contains("refused by \(server.baseURL)/v1 on its own (HTTP 400: malformed)"), "split down to each event")
        #expect(result.stdout.contains("0 still queued"))
    }

    /// A run whose server keeps failing exits 4 (still queued) after the drain time, keeping the
    /// events; `X-Retry-Count` then goes on counting in the next run, which uploads that backlog
    /// with `--input /dev/null` and counts it.
    @Test func aBacklogIsUploadedByTheNextRunAndRetryCountsCarryOver() throws {
        let dir = makeTempDirectory("drain-backlog")
        let failing = try LoopbackHTTPServer()
        failing.defaultResponse = .status(503, body: "down")
        let first = try Self.run(["--drain-timeout", "1"], settings: try Self.settings(in: dir, port: failing.port), storage: dir + "/s",
                                 stdin: Self.lines(0..<500), in: dir)
        failing.stop()
        #expect(first.status == 4, "\(first.stdout)\n\(first.stderr)")
        #expect(first.stdout.contains("500 still queued"), "\(first.stdout)")
        #expect(first.stdout.contains("last failed upload: HTTP 503: down"))
        let attempts = failing.requests.map { Int($0.header("X-Retry-Count") ?? "") ?? -1 }
        #expect(attempts.count >= 2 && attempts == Array(0..<attempts.count), "\(attempts)")

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let second = try Self.run(["--input", "/dev/null"], settings: try Self.settings(in: dir, port: server.port, name: "ok.json"),
                                  storage: dir + "/s", in: dir)
        #expect(second.status == 0, "\(second.stdout)\n\(second.stderr)")
        #expect(Set(try server.messageIds()) == Set((0..<500).map { "m-\($0)" }))
        #expect(second.stdout.contains("500 from earlier runs (backlog), 500 uploaded"), "\(second.stdout)")
        #expect(server.requests.first?.header("X-Retry-Count") == String(attempts.count), "counts on across runs")
        #expect(second.stdout.contains("0 still queued"))
    }

    /// A second process on the same storage: exit 2 at start-up, before any input is read.
    @Test func lockedStorageExitsTwoBeforeReadingInput() throws {
        let dir = makeTempDirectory("drain-locked")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let holder = try DurableQueue(directory: dir + "/s/queue")
        defer { try? holder.close() }
        let result = try Self.run([], settings: try Self.settings(in: dir, port: server.port), storage: dir + "/s",
                                  stdin: Self.lines(0..<10), in: dir)
        #expect(result.status == 2, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("is in use"), "\(result.stderr)")
        #expect(result.stderr.contains("no input was read"))
        #expect(!result.stdout.contains("events accepted"))
    }

    /// Storage below a regular file cannot be created: exit 2, nothing accepted.
    @Test func uncreatableStorageExitsTwo() throws {
        let dir = makeTempDirectory("drain-uncreatable")
        try "x".write(toFile: dir + "/file", atomically: true, encoding: .utf8)
        let result = try Self.run([], settings: try Self.settings(in: dir, port: 9), storage: dir + "/file/storage",
                                  stdin: Self.lines(0..<10), in: dir)
        #expect(result.status == 2, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("\(dir)/file/storage"), "names the path: \(result.stderr)")
        #expect(!result.stdout.contains("events accepted"))
    }
}
