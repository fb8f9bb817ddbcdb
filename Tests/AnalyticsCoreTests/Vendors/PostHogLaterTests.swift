import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// libPostHogIntegration.so in a client, in this process and in a jailed runner without a network
/// grant: events batched across calls through the host's HTTP requests, each call answered when
/// the strict PostHog fake answered the request that carried it (ABI 1.3 finish later).
@Suite struct PostHogLaterTests {
    static func client(_ fake: PostHogFake, mode: IsolationMode, extra: JSONObject = [:]) throws -> FixtureLibraryClient {
        _ = try SwiftPluginFiles.load("PostHogIntegration")  // fails with the reason when not built or stale
        var settings: JSONObject = ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)]
        settings.merge(extra)
        return try FixtureLibraryClient(file: SwiftPluginFiles.path("PostHogIntegration"), key: "PostHog", settings: settings, mode: mode)
    }

    static func track(_ c: FixtureLibraryClient, _ name: String, id: String, user: String = "u-1") {
        _ = try? c.analytics.process(payload: ["type": "track", "event": .string(name), "userId": .string(user), "messageId": .string(id)])
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aThousandEventsTravelInBatchesAndEachIsAnsweredByItsRequest(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        let c = try Self.client(fake, mode: mode)
        for i in 0..<1000 { Self.track(c, "Item \(i)", id: "m-\(i)", user: "u-\(i % 7)") }
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.delivered == 1000 && stats.failed == 0 && stats.abandoned == 0, "\(stats)")
        #expect(Set(fake.events.compactMap { $0["uuid"]?.stringValue }).count == 1000)
        // Every event once; requests run side by side (each event has its own time), each in
        // call order.
        #expect(fake.events.compactMap { $0["event"]?.stringValue }.sorted() == (0..<1000).map { "Item \($0)" }.sorted())
        for request in fake.server.requests {
            let n = ((try? JSON(parsing: request.body))?["batch"]?.arrayValue ?? []).compactMap { $0["event"]?.stringValue?.split(separator: " ").last.flatMap { Int($0) } }
            #expect(n == n.sorted(), "in call order within a request: \(n)")
        }
        // Batched across calls: events that arrive while a request runs go together in the next
        // (how many depends on timing: an event goes at once when no request runs).
        let sizes = fake.server.requests.map { (try? JSON(parsing: $0.body))?["batch"]?.arrayValue?.count ?? 0 }
        #expect(sizes.reduce(0, +) == 1000 && sizes.allSatisfy { $0 <= 100 }, "\(sizes)")
        #expect(sizes.count < 500 && sizes.contains { $0 > 1 }, "\(sizes.count) requests for 1,000 events")
        #expect(fake.server.requests.allSatisfy { $0.header("Content-Encoding") == "gzip" }, "gzip by default, done by the host")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }

    /// Captures and other people's changes need no order between requests; one person's changes
    /// do (PostHog applies them in the order it ingests them): while PostHog has not answered the
    /// request holding u-1's identify, full requests of captures and of u-2's identify go, and the
    /// request holding u-1's next identify waits for it.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func aPersonsChangesGoInOrderAndEverythingElseSideBySide(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        defer { fake.gate.release() }
        fake.gate.holdNext()
        let c = try Self.client(fake, mode: mode)
        func identify(_ user: String, _ n: Int) {
            _ = try? c.analytics.process(payload: ["type": "identify", "userId": .string(user), "traits": ["n": .number(JSONNumber(n))],
                                                   "messageId": .string(String(format: "00000000-0000-4000-8000-%012d", n))])
        }
        identify("u-1", 1)
        #expect(fake.gate.waitUntilHeld(1), "u-1's identify reached PostHog, whose answer is held")
        for i in 1...100 { Self.track(c, "Item \(i)", id: "m-\(i)") }
        #expect(fake.waitForEvents(101), "a full request of captures while u-1's identify is unanswered")
        identify("u-2", 2)
        for i in 101...199 { Self.track(c, "Item \(i)", id: "m-\(i)") }
        #expect(fake.waitForEvents(201), "a full request holding u-2's identify: another person, side by side")
        identify("u-1", 3)
        for i in 200...298 { Self.track(c, "Item \(i)", id: "m-\(i)") }
        // (The server counts a request once answered: the held one is not counted yet.)
        #expect(fake.server.requestCount == 2 && fake.events.count == 201, "u-1's next identify waits for its first")
        #expect(fake.gate.held == 1)
        fake.gate.release()
        #expect(c.analytics.flush())
        let names = fake.events.compactMap { $0["event"]?.stringValue }
        #expect(names.count == 301 && Set(fake.events.compactMap { $0["uuid"]?.stringValue }).count == 301, "\(names.count)")
        let order = fake.events.compactMap { $0["properties"]?["$set"]?["n"]?.intValue }
        #expect(order.firstIndex(of: 3)! > order.firstIndex(of: 1)!, "u-1's identifies in order: \(order)")
        let stats = try #require(c.stats)
        #expect(stats.delivered == 301 && stats.failed == 0 && stats.abandoned == 0, "\(stats)")
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aRefusedBatchIsSplitSoOnlyTheBadEventFails(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        fake.poisonedEvents = ["Poison"]
        let c = try Self.client(fake, mode: mode)
        // While the first request runs, the rest gather into requests that hold the poison.
        for i in 0..<9 { Self.track(c, i == 5 ? "Poison" : "Fine \(i)", id: "m-\(i)") }
        #expect(c.analytics.flush())
        // Every good event once (split halves may run side by side, so in any order).
        #expect(fake.events.compactMap { $0["event"]?.stringValue }.sorted() == [0, 1, 2, 3, 4, 6, 7, 8].map { "Fine \($0)" })
        #expect(fake.refused.contains { $0.contains("Poison") }, "the poison went in a request with others and was split off: \(fake.refused)")
        #expect(!fake.events.contains { $0["event"] == "Poison" })
        let stats = try #require(c.stats)
        #expect(stats.failed == 1, "\(stats)")
        #expect(c.errors.messages.contains { $0.contains("PostHog refused event Poison") && $0.contains("400") }, "\(c.errors.messages)")
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aServerErrorIsRetriedByTheHostAndTheEventArrivesOnce(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        fake.failNext(.status(503, body: "busy"))
        fake.failNext(.status(429, headers: [("Retry-After", "0")], body: "slow down"))
        let c = try Self.client(fake, mode: mode)
        Self.track(c, "Kept", id: "m-kept")
        #expect(c.analytics.flush())
        #expect(fake.events.compactMap { $0["event"]?.stringValue } == ["Kept"])
        #expect(fake.server.requestCount == 3)
        let stats = try #require(c.stats)
        #expect(stats.delivered == 1 && stats.failed == 0, "\(stats)")
        #expect(c.analytics.shutdown())
    }

    /// An event is answered OK only when PostHog acknowledged it: while PostHog keeps failing,
    /// the host's retries end and the event is counted failed, never answered OK.
    @Test func nothingIsAnsweredOKBeforePostHogAcknowledgedIt() throws {
        let fake = try PostHogFake()
        fake.failNext(.status(503, body: "down"), times: 50)
        let c = try Self.client(fake, mode: .inProcess)
        Self.track(c, "Never Acked", id: "m-x")
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        // Counted as a synchronous failure is: handed over (delivered) and failed; the summary
        // shows delivered − failed, so nothing as delivered to PostHog.
        #expect(stats.delivered == 1 && stats.failed == 1 && stats.dropped == 0, "\(stats)")
        #expect(fake.events.isEmpty)
        #expect(c.errors.messages.contains { $0.contains("503") }, "\(c.errors.messages)")
        #expect(c.analytics.shutdown())
    }
}
