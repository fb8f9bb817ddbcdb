import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// What a library's durable queue still holds at `shutdown()` is never dropped without a word:
/// with `.memory` storage it goes with the directory, counted as failed and reported with the
/// count; on disk it is logged as waiting, and the next run delivers it. The library is PostHog
/// (durable, finish later) against its fake holding every answer: the calls it holds reach the
/// host's bound on pending calls, and the rest of the 1,500 events wait in its queue.
@Suite struct DurableShutdownReportTests {
    static let events = 1_500

    static func client(_ fake: PostHogFake, mode: IsolationMode, configure: @escaping (inout Configuration) -> Void) throws -> FixtureLibraryClient {
        _ = try SwiftPluginFiles.load("PostHogIntegration")  // fails with the reason when not built or stale
        let settings: JSONObject = ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)]
        return try FixtureLibraryClient(file: SwiftPluginFiles.path("PostHogIntegration"), key: "PostHog", settings: settings, mode: mode) {
            $0.flushTimeout = 1
            $0.hookTimeout = 1
            configure(&$0)
        }
    }

    static func track(_ c: FixtureLibraryClient, _ n: Int) {
        _ = try? c.analytics.process(payload: ["type": "track", "event": .string("E\(n)"), "userId": "u-1", "messageId": .string("m-\(n)")])
    }

    /// "shutdown: N event(s) not yet delivered by PostHog …" → N.
    static func count(in line: String) -> Int? {
        guard let match = line.firstMatch(of: #/shutdown: (\d+) event\(s\) not yet delivered by PostHog/#) else { return nil }
        return Int(match.1)
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func memoryStorageReportsTheEventsALibrarysQueueStillHolds(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        defer { fake.gate.release(); fake.server.stop() }
        fake.gate.holdNext(Self.events)
        let c = try Self.client(fake, mode: mode) { $0.storageMode = .memory(100) }
        for i in 0..<Self.events { Self.track(c, i) }
        let directory = c.analytics.configuration.storageDirectory
        _ = c.analytics.shutdown()
        let stats = try #require(c.stats)
        let discarded = c.errors.messages.filter { $0.contains("discarded with the memory storage") }
        #expect(discarded.count == 1, "\(c.errors.messages)")
        let n = try #require(discarded.first.flatMap(Self.count), "\(discarded)")
        #expect(n > 0 && n <= Self.events)
        #expect(c.logs.withLock { $0 }.contains { $0.contains("\(n) event(s) not yet delivered by PostHog are discarded") }, "the log handler too")
        #expect(stats.failed >= n, "counted as failed: failed \(stats.failed)")
        #expect(!FileManager.default.fileExists(atPath: directory), "memory storage left nothing")
    }

    /// On disk, as users meet it: one `analytics-host run` stops (--drain-timeout 1) while PostHog
    /// holds every answer, says how many events stay and exits 4; the next run, the vendor
    /// answering, delivers them and exits 0. (In one test process the first client's abandoned
    /// worker would still hold the queue's lock.)
    @Test(arguments: [false, true])
    func onDiskTheyAreLoggedAsWaitingAndTheNextRunDeliversThem(isolated: Bool) throws {
        let dir = makeTempDirectory("durable-shutdown")
        defer { FixtureBuilder.remove(dir) }
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        _ = try SwiftPluginFiles.load("PostHogIntegration")  // fails with the reason when not built or stale
        try FileManager.default.copyItem(atPath: SwiftPluginFiles.path("PostHogIntegration"), toPath: plugins + "/libPostHogIntegration.so")
        let fake = try PostHogFake()
        defer { fake.gate.release(); fake.server.stop() }
        fake.gate.holdNext(Self.events)
        try #"{"integrations":{"PostHog":{"apiKey":"\#(fake.projectKey)","apiHost":"\#(fake.baseURL)"}}}"#
            .write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage", "--quiet"]
        if isolated { arguments.append("--isolate") }
        let input = (0..<Self.events).map { #"{"type":"track","event":"E\#($0)","userId":"u-1","messageId":"m-\#($0)"}"# }.joined(separator: "\n") + "\n"
        let first = try HostBinary.run(arguments + ["--drain-timeout", "1", "--hook-timeout", "1"], stdin: input, in: dir)
        #expect(first.status == 4, "kept for the next run: \(first.stderr.suffix(600))")
        let waiting = first.stderr.split(separator: "\n").first { $0.contains("stay in its queue") && $0.contains("for the next run") }
        let n = try #require(waiting.flatMap { Self.count(in: String($0)) }, "\(first.stderr.suffix(800))")
        #expect(n > 0 && n <= Self.events)
        #expect(!first.stderr.contains("discarded"))
        fake.gate.release()

        let second = try HostBinary.run(arguments + ["--drain-timeout", "60"], stdin: "", in: dir)
        #expect(second.status == 0, "\(second.stderr.suffix(600))")
        let ids = Set(fake.events.compactMap { $0["properties"]?["$insert_id"]?.stringValue ?? $0["uuid"]?.stringValue })
        #expect(ids.count >= n, "the next run delivered what waited (\(n)): \(ids.count) distinct events at PostHog")
        #expect(!second.stderr.contains("not yet delivered"), "\(second.stderr.suffix(600))")
    }
}
