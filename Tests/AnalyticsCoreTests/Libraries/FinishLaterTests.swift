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

    /// `fixture`: a C fixture built now; `file`: a library built already (a Swift fixture).
    init(fixture: String? = nil, file given: String? = nil, key: String, settings: JSONObject, mode: IsolationMode = .inProcess,
         hookTimeout: Double = 10, defines: [String] = [], logThreshold: LogLevel? = nil,
         configure: (inout Configuration) -> Void = { _ in }) throws {
        self.key = key
        directory = makeTempDirectory("loader")
        let file = try given ?? FixtureBuilder.library(fixture!, in: directory, defines: defines)
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
        configuration.logThreshold = logThreshold
        configuration.errorHandler = errors.handler
        let logs = self.logs
        configuration.logHandler = { _, message in logs.withLock { $0.append(message) } }
        configure(&configuration)
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

    @Test(arguments: [IsolationMode.inProcess, .process])
    func pendingEventsAreCompletedByTheUploadAndTheWorkerDoesNotWaitForThem(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 5], mode: mode)
        c.track(12)
        #expect(c.analytics.flush())
        // Uploads run concurrently (up to the host's bound), so they may arrive in any order.
        #expect(server.requests.map(Self.indices).sorted { $0.first ?? 0 < $1.first ?? 0 } == [Array(0..<5), Array(5..<10), [10, 11]])
        let stats = try #require(c.stats)
        #expect(stats.delivered == 12)
        #expect(stats.failed == 0)
        #expect(stats.abandoned == 0)
        _ = c.analytics.shutdown()
        #expect(c.errors.messages.isEmpty, "\(c.errors.messages)")
        #expect(c.lines.contains("held max=5"))
    }

    /// Upload answers whose done callbacks take long on the host's threads (the library completes
    /// from there) while more answers wait. In process mode those threads are the runner's, inside
    /// its jail: libdispatch's global pool checks on its workers every second by reading
    /// /proc/<tid>/stat, which Landlock refuses, and traps (SIGILL) when work waits at that moment.
    /// The runner must not hand answers to that pool.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func slowDoneCallbacksOnTheHostsThreadsCompleteEveryEventWithoutEndingTheRunner(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher",
                                         settings: ["url": .string(server.baseURL + "/batch"), "batch": 1, "ack_ms": 1300], mode: mode)
        c.track(4)
        #expect(c.analytics.flush())
        #expect(server.requests.map(Self.indices).sorted { $0.first ?? 0 < $1.first ?? 0 } == [[0], [1], [2], [3]])
        let stats = try #require(c.stats)
        #expect(stats.delivered == 4 && stats.failed == 0 && stats.abandoned == 0, "\(c.errors.messages)")
        #expect(stats.restarts == 0, "\(c.errors.messages)")
        _ = c.analytics.shutdown()
        #expect(c.errors.messages.isEmpty, "\(c.errors.messages)")
        #expect(c.lines.contains("held max=1"))
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aRetryableCompletionCallsTheEventsAgainInTheirOrder(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(503, body: "busy"))
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 4], mode: mode)
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

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aPermanentCompletionIsReportedAndCountedAsAFailure(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(400, body: "bad"))
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/batch"), "batch": 2], mode: mode)
        c.track(2)
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.failed == 2)
        // As a synchronous failure counts: handed over (delivered) and failed, not dropped; the
        // summary shows delivered − failed.
        #expect(stats.delivered == 2 && stats.dropped == 0 && stats.abandoned == 0)
        #expect(c.errors.messages.filter { $0.contains("track failed: vendor refused the batch with HTTP 400") }.count == 2)
        _ = c.analytics.shutdown()
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func pendingWorkPastTheHookTimeoutIsAbandonedAndCountedAndLateCompletionsAreNoOps(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "never"],
                                         mode: mode, hookTimeout: 0.5)
        c.track(3)
        let started = monotonicSeconds()
        _ = c.analytics.shutdown()
        #expect(monotonicSeconds() - started < 5)
        let stats = try #require(c.stats)
        #expect(stats.abandoned == 3)
        #expect(stats.delivered == 0)
        // Reported as they expire (one report may hold several calls): three in all.
        let reports = c.errors.messages.filter { $0.contains("(track) answered pending, then no answer") && $0.contains("counted as abandoned") }
        #expect(reports.compactMap { Int($0.split(separator: " ")[2]) }.reduce(0, +) == 3, "\(c.errors.messages)")
        // The library completed its last token from destroy: refused, and said why in the log.
        #expect(c.lines.contains("complete after destroy=2"))
        #expect(c.lines.contains { $0.contains("after its instance ended; ignored") })
        // The library heard of the abandonment (AH_EXT_NOTICES) before destroy.
        #expect(c.lines.contains { $0.hasPrefix("notice kind=1 text=") && $0.contains("answered pending, then no answer") })
    }

    @Test func pendingIsBoundedPerInstanceLikeAFullQueue() throws {
        let bound = PendingCalls.defaultMaxPending
        // The library holds more than the bound, the worker's queue takes what waits.
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "never"],
                                         hookTimeout: 8, defines: ["MAX_HELD=\(bound + 100)"],
                                         configure: { $0.destinationQueueCapacity = bound + 100 })
        c.track(bound + 20)
        let stats = try #require(c.stats)
        // The worker stops at the bound, the rest waits in its queue until the timeout frees room
        // (handing over the bound's events takes a few seconds: the timeout is longer).
        #expect(eventually(timeout: 30) { stats.delivered == bound })
        #expect(stats.delivered == bound && stats.abandoned == 0 && stats.received == bound + 20)
        #expect(eventually(timeout: 30) { stats.abandoned == bound && stats.delivered == 20 }, "abandoned \(stats.abandoned) delivered \(stats.delivered) received \(stats.received) \(c.errors.messages)")
        _ = c.analytics.shutdown()
        #expect(stats.abandoned == bound + 20)
        #expect(stats.delivered == 0)
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aSecondCompletionIsARefusedAndReportedNoOp(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": .string(server.baseURL + "/b"), "batch": 2, "mode": "twice"], mode: mode)
        c.track(2)
        #expect(c.analytics.flush())
        // The second completions follow the first ones on the upload's thread.
        #expect(eventually { c.lines.filter { $0 == "complete again=2" }.count == 2 })
        _ = c.analytics.shutdown()
        #expect(c.lines.filter { !$0.hasPrefix("notice ") && $0.contains("which is not pending (completed twice") }.count == 1)
        // And the library was told of each refusal (AH_EXT_NOTICES), on its own hook thread.
        #expect(c.lines.filter { $0.hasPrefix("notice kind=2 text=completed token ") }.count == 2)
        #expect(c.stats?.delivered == 2)
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func pendingWithoutATokenIsAPermanentFailure(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x", "mode": "tokenless"], mode: mode)
        c.track(1)
        #expect(c.analytics.flush())
        _ = c.analytics.shutdown()
        #expect(c.stats?.failed == 1)
        #expect(c.errors.messages.contains { $0.contains("track answered AH_PENDING without taking a completion token") })
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func theHostSaysWhoItIsAndWhichLogLevelsItKeeps(mode: IsolationMode) throws {
        let quiet = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x"], mode: mode,
                                             logThreshold: .warning)
        _ = quiet.analytics.shutdown()
        #expect(quiet.lines.contains("host=analytics-host \(HostVersion.string) debug=0 error=1"))
        let chatty = try FixtureLibraryClient(fixture: "batcher", key: "Batcher", settings: ["url": "http://127.0.0.1:9/x"], mode: mode,
                                              logThreshold: .debug)
        _ = chatty.analytics.shutdown()
        #expect(chatty.lines.contains("host=analytics-host \(HostVersion.string) debug=1 error=1"))
    }
}
