import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// libGoogleAnalytics4Integration.so in a client, in this process and in a jailed runner without a
/// network grant: events batched across calls per user through the host's HTTP requests, each call
/// answered when the Measurement Protocol fake answered the request that carried it.
@Suite struct GA4LaterTests {
    static func client(_ fake: GA4Fake, mode: IsolationMode, extra: JSONObject = [:], hookTimeout: Double = 10) throws -> FixtureLibraryClient {
        _ = try SwiftPluginFiles.load("GoogleAnalytics4Integration")  // fails with the reason when not built or stale
        var settings: JSONObject = ["measurementId": .string(fake.streamId), "apiSecret": .string(fake.apiSecret), "apiHost": .string(fake.baseURL)]
        settings.merge(extra)
        return try FixtureLibraryClient(file: SwiftPluginFiles.path("GoogleAnalytics4Integration"), key: "Google Analytics 4",
                                        settings: settings, mode: mode, hookTimeout: hookTimeout)
    }

    static let now = ISO8601DateFormatter().string(from: Date())

    static func track(_ c: FixtureLibraryClient, _ name: String, user: String, n: Int) {
        _ = try? c.analytics.process(payload: ["type": "track", "event": .string(name), "userId": .string(user), "anonymousId": .string("anon-\(user)"),
                                               "messageId": .string("m-\(n)"), "timestamp": .string(now), "properties": ["n": .number(JSONNumber(n))]])
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func eventsTravelInRequestsOfOneUserAndAtMost25(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        let c = try Self.client(fake, mode: mode)
        for n in 0..<60 { Self.track(c, "Item Viewed", user: n < 30 ? "u-1" : "u-2", n: n) }
        #expect(c.analytics.flush())
        #expect(fake.violations == [])
        let stats = try #require(c.stats)
        #expect(stats.delivered == 60 && stats.failed == 0, "\(stats)")
        // Every event once; requests run side by side, so GA4 orders by each event's own time.
        #expect(fake.events.compactMap { $0["params"]?["n"]?.intValue }.sorted() == Array(0..<60), "every event once")
        for body in fake.bodies {
            let n = (body["events"]?.arrayValue ?? []).compactMap { $0["params"]?["n"]?.intValue }
            #expect(n == n.sorted(), "in call order within a request: \(n)")
        }
        for body in fake.bodies {
            let events = body["events"]?.arrayValue ?? []
            #expect(events.count <= 25)
            // Segment's rule: client_id is the userId when there is one.
            #expect(body["client_id"] != nil && body["client_id"] == body["user_id"], "one user per request")
            #expect(events.allSatisfy { $0["timestamp_micros"]?.intValue != nil }, "each event keeps its own time")
        }
        // A client's events gathered across calls: 25, 5 for each user.
        let sizes = fake.bodies.map { $0["events"]?.arrayValue?.count ?? 0 }
        #expect(sizes.sorted() == [5, 5, 25, 25], "\(sizes)")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }

    /// Requests need no order between them (each event has its time): while GA4 has not answered
    /// one client's request, a full one of another client goes, and each call is still answered
    /// by its own.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func aFullRequestGoesWhileAnEarlierOneIsUnanswered(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        defer { fake.gate.release() }
        fake.gate.holdNext()
        let c = try Self.client(fake, mode: mode)
        Self.track(c, "First", user: "u-1", n: 0)
        #expect(fake.gate.waitUntilHeld(1), "the first call's request reached GA4, whose answer is held")
        for n in 1...25 { Self.track(c, "Item Viewed", user: "u-2", n: n) }
        Self.track(c, "Second", user: "u-1", n: 26)
        // 25 events of u-2 gathered: that request goes although u-1's is still unanswered.
        // (The server counts a request once answered: the held one is not counted yet.)
        #expect(fake.server.waitForRequests(1), "a second request answered while the first is not")
        #expect(fake.gate.held == 1)
        let second = fake.bodies.last?["events"]?.arrayValue?.compactMap { $0["params"]?["n"]?.intValue }
        #expect(second == Array(1...25), "a full request of the later calls, in order")
        fake.gate.release()
        #expect(c.analytics.flush())
        #expect(fake.events.compactMap { $0["params"]?["n"]?.intValue }.sorted() == Array(0...26))
        let firstClient = fake.bodies.filter { $0["client_id"] == "u-1" }.flatMap { $0["events"]?.arrayValue ?? [] }
        #expect(firstClient.compactMap { $0["params"]?["n"]?.intValue } == [0, 26], "u-1's events in order")
        let stats = try #require(c.stats)
        #expect(stats.delivered == 27 && stats.failed == 0 && stats.abandoned == 0, "\(stats)")
        #expect(c.analytics.shutdown())
    }

    /// A server's stream interleaves many users: each client's events are gathered from across
    /// the queue into requests of up to 25, not sent one request per event.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func manyUsersInterleavedTravelInFullRequestsPerClient(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        // A wait long enough that no group goes for its age while the calls are made.
        let c = try Self.client(fake, mode: mode, extra: ["maxWaitSeconds": 5])
        let users = 40, perUser = 30
        for n in 0..<(users * perUser) { Self.track(c, "Item Viewed", user: "u-\(n % users)", n: n) }
        #expect(c.analytics.flush())
        #expect(fake.violations == [])
        let stats = try #require(c.stats)
        #expect(stats.delivered == users * perUser && stats.failed == 0, "\(stats)")
        #expect(fake.events.compactMap { $0["params"]?["n"]?.intValue }.sorted() == Array(0..<(users * perUser)))
        for body in fake.bodies {
            let n = (body["events"]?.arrayValue ?? []).compactMap { $0["params"]?["n"]?.intValue }
            #expect(Set(n.map { $0 % users }).count == 1, "one client per request")
            #expect(n == n.sorted(), "a client's events in order")
        }
        // Each client's 30 events: one request of 25 and one of 5.
        #expect(fake.bodies.count == users * 2, "\(fake.bodies.count) requests for \(users * perUser) events of \(users) users")
        #expect(c.analytics.shutdown())
    }

    /// Many users interleaved, GA4 slow to answer: the library holds thousands of calls (up to
    /// the host's bound) to fill each client's requests, and works through them a request at a
    /// time for longer than the hook timeout. A held call is not hung while answers keep coming:
    /// none is abandoned or called again, every event arrives once, in far fewer requests than
    /// events. (With the deadline counted from the park alone, the calls still queued behind the
    /// others expired and left the durable queue unsent.)
    @Test(arguments: [IsolationMode.inProcess, .process])
    func manyUsersAreGroupedAndNothingIsLostWhileAnswersTakeLongerThanTheHookTimeout(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        defer { fake.server.stop() }
        fake.responseDelay = 0.05
        let c = try Self.client(fake, mode: mode, extra: ["maxWaitSeconds": 2], hookTimeout: 3)
        let users = 400, perUser = 25, total = users * perUser
        let started = monotonicSeconds()
        for n in 0..<total { Self.track(c, "Item Viewed", user: "u-\(n % users)", n: n) }
        let stats = try #require(c.stats)
        #expect(eventually(timeout: 120) { fake.events.count >= total }, "\(fake.events.count) of \(total) in GA4; \(stats)")
        let requests = fake.server.requestCount
        #expect(monotonicSeconds() - started > 3, "the answers took longer than the hook timeout")
        #expect(c.analytics.flush())
        #expect(stats.queued == 0, "\(stats)")
        #expect(stats.delivered == total && stats.failed == 0 && stats.abandoned == 0, "\(stats)")
        let ingested = fake.events.compactMap { $0["params"]?["n"]?.intValue }
        #expect(ingested.sorted() == Array(0..<total), "every event once: \(ingested.count) of \(total), \(Set(ingested).count) distinct")
        #expect(requests * 5 <= total, "\(requests) requests for \(total) events of \(users) users")
        #expect(fake.violations == [])
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages.prefix(3))")
        #expect(!c.logs.withLock { $0 }.contains { $0.contains("called again") || $0.contains("not pending") }, "no call expired")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func serverErrorsAreRetriedByTheHostAndOtherRefusalsArePermanent(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        fake.failNext(.status(503, body: "unavailable"))
        let c = try Self.client(fake, mode: mode)
        Self.track(c, "Kept", user: "u-1", n: 1)
        #expect(c.analytics.flush())
        #expect(fake.events.compactMap { $0["params"]?["n"]?.intValue } == [1])
        #expect(c.stats?.delivered == 1 && c.stats?.failed == 0)

        fake.failNext(.status(403, body: "forbidden"), times: 1)
        Self.track(c, "Refused", user: "u-1", n: 2)
        #expect(c.analytics.flush())
        #expect(c.stats?.failed == 1)
        #expect(c.errors.messages.contains { $0.contains("Google Analytics 4: POST answered 403") }, "\(c.errors.messages)")
        #expect(c.analytics.shutdown())
    }
}
