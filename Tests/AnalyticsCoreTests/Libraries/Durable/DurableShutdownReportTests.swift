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
        #expect(stats.queued == 0 && stats.failed >= n, "counted as failed: queued \(stats.queued), failed \(stats.failed)")
        #expect(!FileManager.default.fileExists(atPath: directory), "memory storage left nothing")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func onDiskTheyAreLoggedAsWaitingAndTheNextRunDeliversThem(mode: IsolationMode) throws {
        let storage = makeTempDirectory("durable-shutdown")
        defer { FixtureBuilder.remove(storage) }
        let fake = try PostHogFake()
        defer { fake.gate.release(); fake.server.stop() }
        fake.gate.holdNext(Self.events)
        let first = try Self.client(fake, mode: mode) { $0.storageDirectory = storage }
        for i in 0..<Self.events { Self.track(first, i) }
        _ = first.analytics.shutdown()
        let waiting = first.logs.withLock { $0 }.first { $0.contains("stay in its queue") && $0.contains("for the next run") }
        let n = try #require(waiting.flatMap(Self.count), "\(first.logs.withLock { $0 }.suffix(5))")
        #expect(!first.errors.messages.contains { $0.contains("discarded") }, "\(first.errors.messages)")
        fake.gate.release()

        let second = try Self.client(fake, mode: mode) { $0.storageDirectory = storage }
        #expect(second.analytics.flush())
        let stats = try #require(second.stats)
        #expect(stats.received >= n && stats.delivered == stats.received && stats.queued == 0,
                "the next run delivered what waited (\(n)): received \(stats.received), delivered \(stats.delivered), queued \(stats.queued)")
        _ = second.analytics.shutdown()
        #expect(!second.logs.withLock { $0 }.contains { $0.contains("not yet delivered") })
    }
}
