import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A client with one library built from a C fixture, its settings under the library's key, and the
/// hook timeout a test needs.
final class FixtureLibraryClient: Sendable {
    let analytics: Analytics
    let errors = ErrorLog()
    let logs = Locked<[String]>([])
    let key: String
    private let directory: String

    init(fixture: String, key: String, settings: JSONObject, mode: IsolationMode = .inProcess, hookTimeout: Double = 10) throws {
        self.key = key
        directory = try FixtureBuilder.makeDirectory()
        let file = try FixtureBuilder.library(fixture, in: directory)
        let library = try PluginLoader().load(file: file)
        let factory: IntegrationFactory
        if mode == .process {
            let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
            factory = ProcessIntegrationFactory(info: library.info, runner: runner)
        } else {
            factory = NativeIntegrationFactory(library: library, retryPolicy: NativeRetryPolicy(maxAttempts: 4, initialDelay: 0.05, maxDelay: 0.2))
        }
        var configuration = Configuration(writeKey: "wk", storageDirectory: directory + "/state")
        configuration.settingsLocation = .defaultsOnly
        configuration.trackApplicationLifecycleEvents = false
        configuration.autoAddSegmentDestination = false
        configuration.defaultSettings = Settings(["integrations": [key: .object(settings)]])
        configuration.integrationFactories = [factory]
        configuration.hookTimeout = hookTimeout
        configuration.errorHandler = errors.handler
        let logs = self.logs
        configuration.logHandler = { _, message in logs.withLock { $0.append(message) } }
        analytics = Analytics(configuration: configuration)
    }

    deinit { FixtureBuilder.remove(directory) }

    /// The library's log lines, without the "key: " prefix.
    var lines: [String] { logs.withLock { $0 }.compactMap { $0.hasPrefix(key + ": ") ? String($0.dropFirst(key.count + 2)) : nil } }
    var stats: DestinationStats? { analytics.timeline.stats(forKey: key) }
    func track(_ n: Int) { for i in 0..<n { analytics.track("E\(i)", properties: ["i": .number(JSONNumber(i))]) } }
}

/// ABI 1.3 `AH_EXT_FINISH_LATER` with a real vendor-style library (Tests/Fixtures/batcher.c: track
/// answers pending and the upload's acknowledgement completes the batch) against the loopback
/// server.
@Suite struct FinishLaterTests {
    /// The `i` properties of the events a request carried, in order.
    static func indices(_ request: RecordedRequest) -> [Int] {
        guard case .array(let events)? = try? JSON(parsing: request.body) else { return [] }
        return events.compactMap { $0.objectValue?["properties"]?.objectValue?["i"]?.intValue }
    }

    @Test func pendingEventsAreCompletedByTheUploadAndTheWorkerDoesNotWaitForThem() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 5])
        c.track(12)
        #expect(c.analytics.flush())
        #expect(server.requests.map(Self.indices) == [Array(0..<5), Array(5..<10), [10, 11]])
        let stats = try #require(c.stats)
        #expect(stats.delivered == 12)
        #expect(stats.failed == 0)
        #expect(stats.abandoned == 0)
        _ = c.analytics.shutdown()
        #expect(c.errors.messages.isEmpty)
        #expect(c.lines.contains("held max=5"))
    }

    @Test func aRetryableCompletionCallsTheEventsAgainInTheirOrder() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(503, body: "busy"))
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 4])
        c.track(4)
        #expect(c.analytics.flush())
        #expect(eventually { server.requestCount == 2 })
        #expect(server.requests.map(Self.indices) == [[0, 1, 2, 3], [0, 1, 2, 3]])
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.delivered == 4)
        #expect(stats.failed == 0)
        _ = c.analytics.shutdown()
    }

    @Test func aPermanentCompletionIsReportedAndCountedAsAFailure() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(400, body: "bad"))
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 2])
        c.track(2)
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.failed == 2)
        #expect(stats.dropped == 2)
        #expect(stats.delivered == 0)
        #expect(c.errors.messages.filter { $0.contains("track failed: vendor refused the batch with HTTP 400") }.count == 2)
        _ = c.analytics.shutdown()
    }

    @Test func pendingWorkPastTheHookTimeoutIsAbandonedAndCountedAndLateCompletionsAreNoOps() throws {
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "never"],
                                         hookTimeout: 0.5)
        c.track(3)
        let started = monotonicSeconds()
        _ = c.analytics.shutdown()
        #expect(monotonicSeconds() - started < 5)
        let stats = try #require(c.stats)
        #expect(stats.abandoned == 3)
        #expect(stats.delivered == 0)
        #expect(c.errors.messages.contains { $0.contains("3 calls (track) answered pending, then no answer") && $0.contains("counted as abandoned") })
        // The library completed its last token from destroy: refused, and said why in the log.
        #expect(c.lines.contains("complete after destroy=2"))
        #expect(c.lines.contains { $0.contains("after its instance ended; ignored") })
    }

    @Test func pendingIsBoundedPerInstanceLikeAFullQueue() throws {
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "never"],
                                         hookTimeout: 2)
        let bound = PendingCalls.defaultMaxPending
        c.track(bound + 20)
        let stats = try #require(c.stats)
        // The worker stops at the bound, the rest waits in its queue until the timeout frees room.
        #expect(eventually { stats.delivered == bound })
        #expect(stats.delivered == bound && stats.abandoned == 0 && stats.received == bound + 20)
        #expect(eventually { stats.abandoned == bound && stats.delivered == 20 }, "abandoned \(stats.abandoned) delivered \(stats.delivered) received \(stats.received) \(c.errors.messages)")
        _ = c.analytics.shutdown()
        #expect(stats.abandoned == bound + 20)
        #expect(stats.delivered == 0)
    }

    @Test func aSecondCompletionIsARefusedAndReportedNoOp() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/b"), "batch": 2, "mode": "twice"])
        c.track(2)
        #expect(c.analytics.flush())
        _ = c.analytics.shutdown()
        #expect(c.lines.filter { $0 == "complete again=2" }.count == 2)
        #expect(c.lines.filter { $0.contains("which is not pending (completed twice") }.count == 1)
        #expect(c.stats?.delivered == 2)
    }

    @Test func pendingWithoutATokenIsAPermanentFailure() throws {
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "tokenless"])
        c.track(1)
        #expect(c.analytics.flush())
        _ = c.analytics.shutdown()
        #expect(c.stats?.failed == 1)
        #expect(c.errors.messages.contains { $0.contains("track answered AH_PENDING without taking a completion token") })
    }
}
