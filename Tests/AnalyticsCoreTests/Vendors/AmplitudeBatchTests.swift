import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// The Amplitude library's batch path (amp_deliver, what its hooks will use once the host hands
/// it batches), run by a driver process built from the same C files, against the strict fake.
@Suite struct AmplitudeBatchTests {
    static func tracks(_ count: Int, badAt bad: Set<Int> = []) -> [String] {
        (0..<count).map { n in
            #"{"type":"track","event":"Item Viewed","userId":"\#(bad.contains(n) ? "u\(n % 10)" : "user-\(n % 7)")","messageId":"m-\#(n)","timestamp":"2026-11-25T10:00:00Z","properties":{"n":\#(n),"label":"ünïcödé 😀 \#(n)"}}"#
        }
    }

    func run(_ fake: AmplitudeFake, _ events: [String], extra: String = "") throws -> AmplitudeDriverRun {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let settings = #"{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"\#(extra.isEmpty ? "" : "," + extra)}"#
        return try AmplitudeDriverRun.run(try AmplitudeBuild.driver(in: dir), settings: settings, events: events)
    }

    @Test func aThousandEventsGoAsFiveRequestsOfTwoHundredInOrder() throws {
        let fake = try AmplitudeFake()
        let result = try run(fake, Self.tracks(1000))
        #expect(result.outcomes == Array(repeating: 0, count: 1000))
        #expect(result.requests == 5)
        #expect(fake.server.requests.map { (try? JSON(parsing: $0.body))?["events"]?.arrayValue?.count } == [200, 200, 200, 200, 200])
        #expect(fake.events.map { $0["event_properties"]?["n"]?.intValue } == (0..<1000).map { $0 })
        #expect(fake.events[999]["event_properties"]?["label"] == "ünïcödé 😀 999")
        #expect(fake.uniqueEvents.count == 1000)
        #expect(result.problem == nil)
    }

    @Test func batchSizeSetsTheEventsPerRequest() throws {
        let fake = try AmplitudeFake()
        let result = try run(fake, Self.tracks(120), extra: #""batchSize":50"#)
        #expect(result.requests == 3)
        #expect(fake.events.count == 120)
    }

    @Test func theEventsAmplitudeNamesAreRefusedAndTheRestOfTheirRequestIsSentAgain() throws {
        let fake = try AmplitudeFake()
        let result = try run(fake, Self.tracks(1000, badAt: [437, 438, 901]))
        #expect(result.outcomes.count == 1000)
        for (n, outcome) in result.outcomes.enumerated() { #expect(outcome == ([437, 438, 901].contains(n) ? 1 : 0), "event \(n)") }
        #expect(result.requests == 7, "five requests, and the two refused ones again without their bad events")
        #expect(fake.events.count == 997)
        let delivered = Set(fake.events.compactMap { $0["insert_id"]?.stringValue })
        #expect(delivered.isDisjoint(with: ["m-437", "m-438", "m-901"]))
        #expect(result.problem?.contains("events_with_invalid_id_lengths") == true)
    }

    @Test func aTooLargeRequestIsSplitUntilItFits() throws {
        let fake = try AmplitudeFake()
        fake.maxBodyBytes = 20_000
        let result = try run(fake, Self.tracks(200))
        #expect(result.outcomes == Array(repeating: 0, count: 200))
        #expect(fake.events.map { $0["event_properties"]?["n"]?.intValue } == (0..<200).map { $0 })
        #expect(fake.refused.contains { $0.hasPrefix("413") })
    }

    @Test func retryAfterLengthensTheBackoffAndExhaustedAttemptsLeaveEventsForLater() throws {
        let fake = try AmplitudeFake()
        fake.failNext(.status(429, headers: [("Retry-After", "3")], body: #"{"code":429,"error":"Too many requests for some devices and users"}"#))
        let throttled = try run(fake, Self.tracks(10))
        #expect(throttled.outcomes == Array(repeating: 0, count: 10))
        #expect(throttled.waits == [3])

        fake.failNext(.status(502, body: "bad gateway"), times: 3)
        let down = try run(fake, Self.tracks(10))
        #expect(down.outcomes == Array(repeating: 2, count: 10))
        #expect(down.waits == [0.5, 1])
        #expect(down.problem?.contains("answered 502") == true && down.problem?.contains("(3 attempts)") == true)
    }
}
