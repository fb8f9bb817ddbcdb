import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Segment's GA4 destination (segmentio/action-destinations, "Google Analytics 4 Cloud") beside
/// ours, one row per behaviour: the event in, what the Measurement Protocol fake received (or
/// the reason the event was refused, naming its messageId). Every row runs through
/// libGoogleAnalytics4Integration.so in a client, in this process and in a jailed runner, against
/// the strict fake, which also lists what GA4 would drop or miscount: nothing may be listed.
/// docs/vendors/ga4.md's table names these rows.
@Suite struct GA4MappingTableTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        /// The event (its messageId is the row's name, its timestamp now unless given).
        let event: JSONObject
        /// Paths into what GA4 received → expected value (nil: absent). `body.` paths read the
        /// request, others the event (`name`, `params.x`, `params.items.0.item_id`).
        let expect: [(String, JSON?)]
        /// A part of the refusal's reason, for a row GA4 must not receive.
        let refused: String?
        /// A part of the report of what was cut to GA4's limits.
        let reported: String?
        var testDescription: String { name }

        init(_ name: String, _ event: JSONObject, expect: [(String, JSON?)] = [], refused: String? = nil, reported: String? = nil) {
            self.name = name
            self.event = event
            self.expect = expect
            self.refused = refused
            self.reported = reported
        }
    }

    static let now = ISO8601DateFormatter().string(from: Date())
    static let hourAgo = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -3600))
    static let longAgo = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -73 * 3600))

    static func track(_ name: String, _ properties: JSONObject = [:], user: String? = "u-1", anonymous: String? = "anon-1", extra: JSONObject = [:]) -> JSONObject {
        var event: JSONObject = ["type": "track", "event": .string(name), "properties": .object(properties)]
        if let user { event["userId"] = .string(user) }
        if let anonymous { event["anonymousId"] = .string(anonymous) }
        event.merge(extra)
        return event
    }

    static let products: JSON = [["product_id": "p-1", "name": "Café", "price": 20, "quantity": 1, "category": "Drinks", "position": 1],
                                 ["product_id": "p-2", "name": "Thé", "price": 5.25, "quantity": 2]]

    static let rows: [Row] = [
        Row("engagement_time_msec is 1 on every event", track("Video Played"),
            expect: [("name", "Video_Played"), ("params.engagement_time_msec", 1)]),
        Row("session_id and session_number when given", track("Video Played", ["session_id": 1_732_000_000, "session_number": 3]),
            expect: [("params.session_id", 1_732_000_000), ("params.session_number", 3)]),
        Row("client_id is userId, else anonymousId", track("Video Played"),
            expect: [("body.client_id", "u-1"), ("body.user_id", "u-1")]),
        Row("client_id of an anonymous event is its anonymousId", track("Video Played", user: nil, anonymous: "anon-9"),
            expect: [("body.client_id", "anon-9"), ("body.user_id", nil)]),
        Row("timestamp_micros from timestamp", track("Video Played", extra: ["timestamp": .string(hourAgo)]),
            expect: [("params.engagement_time_msec", 1)]),
        Row("an event older than 72 hours is refused with the reason", track("Video Played", extra: ["timestamp": .string(longAgo)]),
            refused: "GA4 drops events older than 72 hours"),
        Row("Order Completed is purchase: value from total, not revenue",
            track("Order Completed", ["order_id": "o-7", "total": 30.5, "revenue": 25, "currency": "eur", "coupon": "WINTER",
                                      "shipping": 3, "tax": 2.5, "affiliation": "Shop", "products": products]),
            expect: [("name", "purchase"), ("params.transaction_id", "o-7"), ("params.value", 30.5), ("params.currency", "EUR"),
                     ("params.coupon", "WINTER"), ("params.shipping", 3), ("params.tax", 2.5), ("params.affiliation", "Shop"),
                     ("params.items.0.item_id", "p-1"), ("params.items.0.item_name", "Café"), ("params.items.0.index", 1),
                     ("params.items.0.item_category", "Drinks"), ("params.items.1.quantity", 2), ("params.total", nil)]),
        Row("a purchase without currency is refused, not sent as USD", track("Order Completed", ["order_id": "o-8", "total": 10, "products": products]),
            refused: "needs properties.currency"),
        Row("a currency that is not ISO 4217 is refused", track("Order Completed", ["order_id": "o-9", "total": 10, "currency": "EURO", "products": products]),
            refused: "not an ISO 4217 code"),
        Row("a purchase without order_id is refused", track("Order Completed", ["total": 10, "currency": "EUR", "products": products]),
            refused: "needs properties.order_id"),
        Row("Order Refunded is refund with transaction_id and value from total",
            track("Order Refunded", ["order_id": "o-7", "total": 30.5, "currency": "USD"]),
            expect: [("name", "refund"), ("params.transaction_id", "o-7"), ("params.value", 30.5), ("params.currency", "USD")]),
        Row("a value without currency is refused", track("Product Added", ["product_id": "p-1", "name": "Café", "value": 20]),
            refused: "has a value but no currency"),
        Row("Product Added is add_to_cart with the product as its item",
            track("Product Added", ["product_id": "p-1", "name": "Café", "brand": "Maison", "price": 20, "quantity": 1, "currency": "EUR", "value": 20]),
            expect: [("name", "add_to_cart"), ("params.currency", "EUR"), ("params.value", 20), ("params.items.0.item_id", "p-1"),
                     ("params.items.0.item_brand", "Maison"), ("params.items.0.price", 20), ("params.product_id", nil)]),
        Row("Product List Viewed is view_item_list: list_id and category",
            track("Product List Viewed", ["list_id": "l-1", "category": "Deals", "products": products]),
            expect: [("name", "view_item_list"), ("params.item_list_id", "l-1"), ("params.item_list_name", "Deals"), ("params.items.1.item_id", "p-2")]),
        Row("Promotion Viewed is view_promotion: promotion_id, name, creative, position",
            track("Promotion Viewed", ["promotion_id": "pr-1", "name": "Winter", "creative": "banner", "position": "top"]),
            expect: [("name", "view_promotion"), ("params.promotion_id", "pr-1"), ("params.promotion_name", "Winter"),
                     ("params.creative_slot", "banner"), ("params.location_id", "top")]),
        Row("Signed Up is sign_up with method from type", track("Signed Up", ["type": "google"]),
            expect: [("name", "sign_up"), ("params.method", "google")]),
        Row("Products Searched is search with search_term from query", track("Products Searched", ["query": "tea"]),
            expect: [("name", "search"), ("params.search_term", "tea")]),
        Row("custom names: whitespace becomes _", track("  Video  Played "),
            expect: [("name", "Video__Played")]),
        Row("page is page_view from context.page", ["type": "page", "name": "Pricing", "userId": "u-1",
                                                     "context": ["page": ["url": "https://example.com/p", "title": "Pricing — Example", "referrer": "https://example.com/"]]],
            expect: [("name", "page_view"), ("params.page_location", "https://example.com/p"), ("params.page_title", "Pricing — Example"),
                     ("params.page_referrer", "https://example.com/"), ("params.engagement_time_msec", 1)]),
        Row("identify traits are no user_properties by default (email, phone)",
            track("Video Played", extra: ["context": ["traits": ["email": "zoe@example.com", "phone": "+33 6 00 00 00 00", "plan": "pro"]]]),
            expect: [("body.user_properties", nil)]),
        Row("objects, arrays and null are no params: left out and reported", track("Video Played", ["nested": ["x": 1], "list": [1], "none": nil, "kept": "yes"]),
            expect: [("params.kept", "yes"), ("params.nested", nil), ("params.list", nil), ("params.none", nil)], reported: "properties left out"),
        Row("at most 25 params: the rest left out and reported", track("Video Played", JSONObject((0..<40).map { ("p\($0)", JSON.number(JSONNumber($0))) })),
            expect: [("params.p0", 0), ("params.p22", 22), ("params.p23", nil)], reported: "at most 25 params"),
        Row("string values cut to 100 characters and reported", track("Video Played", ["title": .string(String(repeating: "é", count: 120))]),
            expect: [("params.title", .string(String(repeating: "é", count: 100)))], reported: "cut to 100 characters"),
        Row("reserved names are refused", track("session_start"), refused: "reserves"),
    ]

    static func value(_ path: String, body: JSONObject, event: JSONObject) -> JSON? {
        var parts = path.split(separator: ".").map(String.init)
        var current: JSON? = .object(event)
        if parts.first == "body" { current = .object(body); parts.removeFirst() }
        for part in parts {
            if let index = Int(part) { current = current?.arrayValue.flatMap { index < $0.count ? $0[index] : nil } } else { current = current?[part] }
        }
        return current
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func segmentsBehaviourRowByRow(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        let c = try GA4LaterTests.client(fake, mode: mode)
        for (n, row) in Self.rows.enumerated() {
            var event = row.event
            event["messageId"] = .string("row-\(n)")
            if event["timestamp"] == nil { event["timestamp"] = .string(Self.now) }
            // The row's number travels as a param (none of the rows uses `row`).
            var properties = event["properties"]?.objectValue ?? [:]
            if row.name.hasPrefix("at most 25") {
                properties = JSONObject([("row", JSON.number(JSONNumber(n)))] + properties.map { ($0.key, $0.value) })
            } else {
                properties["row"] = .number(JSONNumber(n))
            }
            event["properties"] = .object(properties)
            _ = try c.analytics.process(payload: event)
        }
        #expect(c.analytics.flush())
        #expect(fake.violations == [], "GA4 would drop or miscount: \(fake.violations)")
        var received: [Int: (JSONObject, JSONObject)] = [:]
        for body in fake.bodies {
            for event in (body["events"]?.arrayValue ?? []).compactMap(\.objectValue) {
                if let n = event["params"]?["row"]?.intValue { received[n] = (body, event) }
            }
        }
        let errors = c.errors.messages
        let logs = c.logs.withLock { $0 }
        for (n, row) in Self.rows.enumerated() {
            if let refused = row.refused {
                #expect(received[n] == nil, "\(row.name): refused, so not sent")
                #expect(errors.contains { $0.contains("row-\(n)") && $0.contains(refused) }, "\(row.name): \(errors.filter { $0.contains("row-\(n)") })")
                continue
            }
            guard let (body, event) = received[n] else { Issue.record("\(row.name): not received; \(errors)"); continue }
            for (path, expected) in row.expect {
                #expect(Self.value(path, body: body, event: event) == expected, "\(row.name): \(path) in \(JSON.object(body).serialized())")
            }
            if let reported = row.reported {
                #expect(logs.contains { $0.contains("row-\(n)") && $0.contains(reported) }, "\(row.name): \(logs)")
            }
        }
        // The event time of the timestamp row.
        let timed = try #require(received[4]?.1)
        #expect(timed["timestamp_micros"]?.intValue == ISO8601Timestamp.microseconds(Self.hourAgo))
        #expect(c.analytics.shutdown())
    }

    /// Traits reach GA4 only as the settings map them, from each event's own context.traits.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func traitsAreUserPropertiesOnlyAsTheSettingsMapThem(mode: IsolationMode) throws {
        let fake = try GA4Fake()
        let c = try GA4LaterTests.client(fake, mode: mode, extra: ["userProperties": ["plan": "plan_tier"]])
        for (n, user) in ["u-1", "u-2"].enumerated() {
            _ = try c.analytics.process(payload: ["type": "identify", "userId": .string(user), "messageId": .string("i-\(n)"),
                                                  "traits": ["email": "zoe@example.com", "plan": "pro"]])
            _ = try c.analytics.process(payload: Self.track("Video Played", ["n": .number(JSONNumber(n))], user: user,
                                                            extra: ["messageId": .string("t-\(n)"), "timestamp": .string(Self.now),
                                                                    "context": ["traits": .object(n == 0 ? ["email": "zoe@example.com", "plan": "pro"] : [:])]]))
        }
        #expect(c.analytics.flush())
        #expect(fake.violations == [])
        #expect(fake.server.requestCount == 2, "identify sends nothing")
        let first = try #require(fake.bodies.first { $0["user_id"] == "u-1" })
        #expect(first["user_properties"] == ["plan_tier": ["value": "pro"]], "the mapped trait only, never email")
        let second = try #require(fake.bodies.first { $0["user_id"] == "u-2" })
        #expect(second["user_properties"] == nil, "nothing of one event reaches another")
        #expect(c.analytics.shutdown())
    }
}
