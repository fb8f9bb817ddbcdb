import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Segment's PostHog destination (segmentio/action-destinations, "Posthog") beside ours, one row
/// per behaviour: the event in, what the strict PostHog fake accepted (or the reason the event was
/// refused, naming its messageId). Every row runs through libPostHogIntegration.so in a client, in
/// this process and in a jailed runner; the fake also lists every event PostHog would locate by
/// the sender's address: none may be. docs/vendors/posthog.md's table names these rows.
@Suite struct PostHogMappingTableTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let event: JSONObject
        /// Paths into the accepted capture (`event`, `distinct_id`, `properties.$ip`) → expected
        /// value (nil: absent).
        let expect: [(String, JSON?)]
        let refused: String?
        var testDescription: String { name }

        init(_ name: String, _ event: JSONObject, expect: [(String, JSON?)] = [], refused: String? = nil) {
            self.name = name
            self.event = event
            self.expect = expect
            self.refused = refused
        }
    }

    static let now = ISO8601DateFormatter().string(from: Date())

    static func event(_ type: String, _ fields: JSONObject = [:], user: String? = "u-1", anonymous: String? = "anon-1") -> JSONObject {
        var event: JSONObject = ["type": .string(type)]
        if let user { event["userId"] = .string(user) }
        if let anonymous { event["anonymousId"] = .string(anonymous) }
        event.merge(fields)
        return event
    }

    static let rows: [Row] = [
        Row("track: event name and properties as given",
            event("track", ["event": "Order Completed", "properties": ["revenue": 25, "currency": "EUR", "products": [["product_id": "p-1"]]]]),
            expect: [("event", "Order Completed"), ("properties.revenue", 25), ("properties.currency", "EUR"),
                     ("properties.products.0.product_id", "p-1")]),
        Row("distinct_id is userId", event("track", ["event": "Video Played"]), expect: [("distinct_id", "u-1")]),
        Row("an anonymous event goes with its anonymousId (Segment's default drops it)", event("track", ["event": "Video Played"], user: nil),
            expect: [("distinct_id", "anon-1")]),
        Row("timestamp is the event's own (Segment sends receivedAt)", event("track", ["event": "Video Played", "timestamp": "2026-11-28T10:00:00.123Z"]),
            expect: [("timestamp", "2026-11-28T10:00:00.123Z")]),
        Row("page is $pageview with $current_url from context.page.url",
            event("page", ["name": "Pricing", "context": ["page": ["url": "https://example.com/p", "path": "/p"]]]),
            expect: [("event", "$pageview"), ("properties.$current_url", "https://example.com/p"), ("properties.$title", "Pricing"),
                     ("properties.$pathname", "/p")]),
        Row("screen is $screen with $screen_name", event("screen", ["name": "Basket"]),
            expect: [("event", "$screen"), ("properties.$screen_name", "Basket")]),
        Row("identify is $identify with $set = traits", event("identify", ["traits": ["plan": "pro", "email": "zoe@example.com"]]),
            expect: [("event", "$identify"), ("properties.$set.plan", "pro"), ("properties.$set.email", "zoe@example.com"),
                     ("properties.$anon_distinct_id", "anon-1")]),
        Row("$ip from context.ip: PostHog locates the user by it", event("track", ["event": "Video Played", "context": ["ip": "203.0.113.9"]]),
            expect: [("properties.$ip", "203.0.113.9"), ("properties.$geoip_disable", nil)]),
        Row("no context.ip: $geoip_disable (PostHog would locate the sender)", event("track", ["event": "Video Played"]),
            expect: [("properties.$ip", nil), ("properties.$geoip_disable", true)]),
        Row("context.groupId is $groups", event("track", ["event": "Video Played", "context": ["groupId": "g-1"]]),
            expect: [("properties.$groups.company", "g-1")]),
        Row("group is $groupidentify (Segment: no default action)", event("group", ["groupId": "g-9", "traits": ["name": "Initech"]]),
            expect: [("event", "$groupidentify"), ("properties.$group_type", "company"), ("properties.$group_key", "g-9"),
                     ("properties.$group_set.name", "Initech")]),
        Row("alias is $create_alias (Segment: no default action)", event("alias", ["previousId": "anon-1"]),
            expect: [("event", "$create_alias"), ("distinct_id", "anon-1"), ("properties.alias", "u-1")]),
        // Refused by the library (PostHog's 1 MB per event) or, as here, already by the host's
        // durable queue (its 1 MiB record limit): either way with the messageId, never sent.
        Row("an event over PostHog's 1 MB is refused, never sent",
            event("track", ["event": "Huge", "properties": ["blob": .string(String(repeating: "x", count: 1_100_000))]]),
            refused: "1048576"),
    ]

    static func messageId(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

    static func value(_ path: String, in capture: JSONObject) -> JSON? {
        var current: JSON? = .object(capture)
        for part in path.split(separator: ".").map(String.init) {
            if let index = Int(part) { current = current?.arrayValue.flatMap { index < $0.count ? $0[index] : nil } } else { current = current?[part] }
        }
        return current
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func segmentsBehaviourRowByRow(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        let c = try PostHogLaterTests.client(fake, mode: mode)
        for (n, row) in Self.rows.enumerated() {
            var event = row.event
            event["messageId"] = .string(Self.messageId(n))
            if event["timestamp"] == nil { event["timestamp"] = .string(Self.now) }
            _ = try c.analytics.process(payload: event)
        }
        #expect(c.analytics.flush())
        #expect(fake.refused == [], "PostHog refused: \(fake.refused)")
        let errors = c.errors.messages
        for (n, row) in Self.rows.enumerated() {
            let id = Self.messageId(n)
            let capture = fake.events.first { $0["uuid"]?.stringValue == id }
            if let refused = row.refused {
                #expect(capture == nil, "\(row.name): refused, so not sent")
                #expect(errors.contains { $0.contains(id) && $0.contains(refused) }, "\(row.name): \(errors)")
                continue
            }
            guard let capture else { Issue.record("\(row.name): not received; \(errors)"); continue }
            for (path, expected) in row.expect {
                #expect(Self.value(path, in: capture) == expected, "\(row.name): \(path) in \(JSON.object(capture).serialized().prefix(600))")
            }
        }
        #expect(fake.locatedBySender == [], "located by the sender's address: \(fake.locatedBySender)")
        #expect(c.analytics.shutdown())
    }

    /// Segment's "Disable GeoIP Collection" setting: no event is located, even with its own IP.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func theGeoipSettingTurnsLocationOffForEveryEvent(mode: IsolationMode) throws {
        let fake = try PostHogFake()
        let c = try PostHogLaterTests.client(fake, mode: mode, extra: ["geoipDisable": true])
        _ = try c.analytics.process(payload: Self.event("track", ["event": "Video Played", "messageId": .string(Self.messageId(1)),
                                                                  "context": ["ip": "203.0.113.9"]]))
        #expect(c.analytics.flush())
        let capture = try #require(fake.events.first)
        #expect(capture["properties"]?["$geoip_disable"] == true)
        #expect(capture["properties"]?["$ip"] == "203.0.113.9")
        #expect(c.analytics.shutdown())
    }
}
