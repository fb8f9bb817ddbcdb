import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing
@testable import PostHogIntegration

/// The batch sender against the strict PostHog fake: limits, gzip, retries, refusals, splits.
@Suite struct PostHogDeliveryTests {
    func delivery(_ fake: PostHogFake, _ extra: JSONObject = [:], waits: WaitRecorder) throws -> PostHogDelivery {
        var settings: JSONObject = ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)]
        settings.merge(extra)
        let configuration = try PostHogConfiguration(settings: settings)
        return PostHogDelivery(configuration: configuration, transport: PostHogDelivery.urlSessionTransport(timeout: 10),
                               wait: { waits.wait($0) })
    }

    func events(_ count: Int, name: (Int) -> String = { "Item Viewed \($0)" }) throws -> [PostHogCapture] {
        try (0..<count).map { n in
            try PostHogMapping.capture(wire(#"{"type":"track","event":"\#(name(n))","userId":"u-1","messageId":"m-\#(n)","timestamp":"2026-11-25T10:00:00Z","properties":{"n":\#(n)}}"#),
                                       options: .init())
        }
    }

    @Test func aThousandEventsGoAsTenGzippedRequestsOfAHundredInOrder() throws {
        let fake = try PostHogFake()
        let waits = WaitRecorder()
        let sent = try events(1000)
        let outcomes = try delivery(fake, waits: waits).deliver(sent)
        #expect(outcomes.allSatisfy { $0 == .delivered })
        let requests = fake.server.requests
        #expect(requests.count == 10)
        #expect(requests.allSatisfy { $0.header("Content-Encoding") == "gzip" && $0.wireBodySize < $0.body.count })
        #expect(fake.events.count == 1000)
        #expect(fake.events.map { $0["properties"]?["n"]?.intValue } == (0..<1000).map { $0 })
        #expect(fake.events == sent.compactMap { try? JSON(parsing: $0.bytes).objectValue })
        #expect(waits.waits.isEmpty)
    }

    @Test func nonASCIIAndEmojiArriveByteForByte() throws {
        let fake = try PostHogFake()
        let sent = try events(3) { ["Café ☕ bestellt", "注文完了", "Order 😀👍🏽"][$0] }
        #expect(try delivery(fake, ["gzip": false], waits: WaitRecorder()).deliver(sent) == [.delivered, .delivered, .delivered])
        #expect(fake.events.map { $0["event"]?.stringValue } == ["Café ☕ bestellt", "注文完了", "Order 😀👍🏽"])
        #expect(fake.server.requests[0].header("Content-Encoding") == nil)
    }

    @Test func tooManyRequestsIsRetriedAfterRetryAfter() throws {
        let fake = try PostHogFake()
        fake.failNext(.status(429, headers: [("Retry-After", "7")], body: #"{"type":"throttled_error","code":"rate_limited","detail":"Rate limit exceeded"}"#))
        let waits = WaitRecorder()
        let outcomes = try delivery(fake, waits: waits).deliver(try events(5))
        #expect(outcomes == Array(repeating: .delivered, count: 5))
        #expect(waits.waits == [7], "Retry-After (7 s) lengthens the 0.5 s backoff")
        #expect(fake.events.count == 5)
    }

    @Test func serverErrorsPastTheAttemptsLeaveEveryEventForLater() throws {
        let fake = try PostHogFake()
        fake.failNext(.status(503, body: "upstream unavailable"), times: 3)
        let waits = WaitRecorder()
        let outcomes = try delivery(fake, waits: waits).deliver(try events(4))
        #expect(waits.waits == [0.5, 1.0])
        #expect(outcomes.count == 4)
        for outcome in outcomes {
            guard case .retryLater(let reason) = outcome else { Issue.record("expected retryLater, got \(outcome)"); continue }
            #expect(reason.contains("answered 503: upstream unavailable") && reason.contains("(3 attempts)"))
        }
        #expect(fake.events.isEmpty)
        // The next call (the host's retry) delivers them.
        #expect(try delivery(fake, waits: waits).deliver(try events(4)).allSatisfy { $0 == .delivered })
    }

    @Test func aRefusedBatchIsSplitSoOneBadEventTakesNoOtherDown() throws {
        let fake = try PostHogFake()
        fake.poisonedEvents = ["Item Viewed 6"]
        let outcomes = try delivery(fake, waits: WaitRecorder()).deliver(try events(10))
        #expect(fake.events.count == 9)
        #expect(!fake.events.contains { $0["event"] == "Item Viewed 6" })
        for (n, outcome) in outcomes.enumerated() where n != 6 { #expect(outcome == .delivered) }
        guard case .refused(let reason) = outcomes[6] else { Issue.record("event 6 must be refused"); return }
        #expect(reason.contains("Item Viewed 6") && reason.contains("answered 400") && reason.contains("could not be ingested"))
    }

    @Test func tooLargeRequestsAreSplitUntilTheyFit() throws {
        let fake = try PostHogFake()
        fake.maxBodyBytes = 600
        let outcomes = try delivery(fake, ["gzip": false], waits: WaitRecorder()).deliver(try events(8))
        #expect(outcomes.allSatisfy { $0 == .delivered })
        #expect(fake.events.map { $0["properties"]?["n"]?.intValue } == (0..<8).map { $0 })
        #expect(fake.refused.contains { $0.hasPrefix("413") })
    }

    @Test func aWrongProjectKeyIsRefusedForGoodWithPostHogsReason() throws {
        let fake = try PostHogFake()
        let configuration = try PostHogConfiguration(settings: ["apiKey": "phc_wrong", "apiHost": .string(fake.baseURL)])
        let delivery = PostHogDelivery(configuration: configuration, transport: PostHogDelivery.urlSessionTransport(timeout: 10), wait: { _ in })
        let outcomes = delivery.deliver(try events(2))
        guard case .refused(let reason) = outcomes[0] else { Issue.record("expected refused, got \(outcomes[0])"); return }
        #expect(reason.contains("answered 401") && reason.contains("Project API key invalid"))
        #expect(delivery.requestsSent == 1, "a 401 is not retried")
    }

    @Test func aNetworkFailureIsRetryable() throws {
        let fake = try PostHogFake()
        let url = fake.baseURL
        fake.server.stop()
        let configuration = try PostHogConfiguration(settings: ["apiKey": "phc_x", "apiHost": .string(url), "maxAttempts": 2])
        let waits = WaitRecorder()
        let outcomes = PostHogDelivery(configuration: configuration, transport: PostHogDelivery.urlSessionTransport(timeout: 5), wait: { waits.wait($0) }).deliver(try events(1))
        guard case .retryLater(let reason) = outcomes[0] else { Issue.record("expected retryLater, got \(outcomes[0])"); return }
        #expect(reason.contains("failed"))
        #expect(waits.waits == [0.5])
    }
}
