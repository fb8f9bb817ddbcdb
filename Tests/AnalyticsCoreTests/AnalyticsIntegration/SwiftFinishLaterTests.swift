import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The integration kit's completion form of the hooks (ABI 1.3 finish later) and its face on the
/// host's HTTP requests, through a real Swift library (Tests/SwiftFixtures/Later, linked by
/// `make plugins` into build/fixtures) loaded in this process and in a runner process.
@Suite struct SwiftFinishLaterTests {
    static func client(_ settings: JSONObject, mode: IsolationMode, hookTimeout: Double = 10) throws -> FixtureLibraryClient {
        let file = SwiftPluginFiles.path("LaterFixtureIntegration")
        _ = try SwiftPluginFiles.load("LaterFixtureIntegration")  // fails with the reason when not built or stale
        return try FixtureLibraryClient(file: file, key: "Later", settings: settings, mode: mode, hookTimeout: hookTimeout)
    }

    static func track(_ c: FixtureLibraryClient, _ name: String, outcome: String? = nil, id: String? = nil) {
        var payload: JSONObject = ["type": "track", "event": .string(name), "anonymousId": "a-1"]
        if let outcome { payload["properties"] = ["outcome": .string(outcome)] }
        if let id { payload["messageId"] = .string(id) }
        _ = try? c.analytics.process(payload: payload)
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func answersFromAnotherThreadLetTheHookReturnFirst(mode: IsolationMode) throws {
        let c = try Self.client(["mode": "thread", "delayMs": 50], mode: mode)
        for i in 0..<20 { Self.track(c, "E\(i)") }
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.delivered == 20 && stats.failed == 0 && stats.abandoned == 0)
        #expect(c.lines.first == "mayFinishLater=true maxPending=\(PendingCalls.defaultMaxPending) http=true")
        // Several calls were pending at once: each hook returned before its answer came.
        let most = c.lines.compactMap { $0.hasPrefix("pending max=") ? Int($0.dropFirst(12)) : nil }.max() ?? 0
        #expect(most > 1, "\(c.lines)")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aLaterAnswerCountsAsTheHooksOwnRetryableIsRetriedPermanentIsReported(mode: IsolationMode) throws {
        let c = try Self.client(["mode": "thread"], mode: mode)
        Self.track(c, "Once", outcome: "retryOnce", id: "m-once")
        Self.track(c, "Bad", outcome: "permanent", id: "m-bad")
        Self.track(c, "Fine", id: "m-fine")
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        // As a synchronous answer counts: all three handed over (delivered), the permanent one also
        // failed; the retryable one was called again and then answered OK.
        #expect(stats.delivered == 3 && stats.dropped == 0, "\(stats)")
        #expect(stats.failed == 1, "\(c.errors.messages)")
        #expect(c.errors.messages.contains { $0.contains("fixture: refused m-bad for good") }, "\(c.errors.messages)")
        #expect(!c.errors.messages.contains { $0.contains("m-once") || $0.contains("m-fine") }, "\(c.errors.messages)")
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func anAnswerGivenInsideTheHookIsReturnedAtOnce(mode: IsolationMode) throws {
        let c = try Self.client(["mode": "inline"], mode: mode)
        Self.track(c, "A")
        Self.track(c, "B", outcome: "permanent", id: "m-b")
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        // A failure answered at once counts as reached (delivered) and failed, as for the plain hooks.
        #expect(stats.failed == 1 && stats.abandoned == 0, "\(stats)")
        #expect(c.errors.messages.contains { $0.contains("fixture: refused m-b for good") }, "\(c.errors.messages)")
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aSecondAnswerIsRefusedAndReported(mode: IsolationMode) throws {
        let c = try Self.client(["mode": "twice"], mode: mode)
        Self.track(c, "A")
        #expect(c.analytics.flush())
        #expect(c.stats?.delivered == 1)
        #expect(eventually { c.lines.contains("second answer refused") }, "\(c.lines)")
        #expect(eventually { c.logs.withLock { $0 }.contains { $0.contains("not pending (completed twice") } }, "\(c.logs.withLock { $0 })")
        // The library hears it too (NoticesHook, AH_EXT_NOTICES), on its hook thread at the next call.
        Self.track(c, "B")
        #expect(c.analytics.flush())
        #expect(eventually { c.lines.contains { $0.hasPrefix("notice refused: completed token") } }, "\(c.lines)")
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func heldAnswersAreGivenAtFlushAndTheFlushWaitsForThem(mode: IsolationMode) throws {
        let c = try Self.client(["mode": "hold"], mode: mode)
        for i in 0..<5 { Self.track(c, "E\(i)") }
        #expect(c.analytics.flush())
        #expect(c.stats?.delivered == 5)
        #expect(c.lines.contains("pending max=5"), "\(c.lines)")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }

    /// In process mode the runner has no network access (no grant): the host makes the request.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func hostHTTPPostsWithHeadersAndBodyAndAnswersCompleteTheCalls(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(503, headers: [("Retry-After", "1")], body: "busy"))
        let c = try Self.client(["mode": "http", "url": .string(server.baseURL + "/collect")], mode: mode)
        Self.track(c, "Posted", id: "m-post")
        #expect(c.analytics.flush())
        #expect(c.stats?.delivered == 1)
        let requests = server.requests
        #expect(requests.count == 2, "503 answered retryable, then called again")
        for request in requests {
            #expect(request.method == "POST" && request.path == "/collect")
            #expect(request.header("Content-Type") == "application/json" && request.header("X-Fixture") == "later")
            let body = try JSON(parsing: request.body)
            #expect(body["messageId"] == "m-post" && body["event"] == "Posted")
        }
        #expect(c.lines.contains("retry-after=1"), "\(c.lines)")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }
}
