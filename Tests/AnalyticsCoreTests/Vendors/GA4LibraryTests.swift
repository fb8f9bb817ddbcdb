import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// libGoogleAnalytics4Integration.so through the real loader to the Measurement Protocol fake,
/// which reports whatever GA4 would drop.
@Suite struct GA4LibraryTests {
    func instance(_ fake: GA4Fake) throws -> NativeIntegration {
        let key = fake.appStream ? "firebaseAppId" : "measurementId"
        return try SwiftPluginFiles.load("GoogleAnalytics4Integration").makeInstance(
            settings: settingsObject(#"{"\#(key)":"\#(fake.streamId)","apiSecret":"\#(fake.apiSecret)","apiHost":"\#(fake.baseURL)"}"#),
            services: RecordingHost().services)
    }

    static let now = ISO8601DateFormatter().string(from: Date())

    @Test func ecommerceBecomesRecommendedEventsAndIdentifySendsNothing() throws {
        let fake = try GA4Fake()
        let ga4 = try instance(fake)
        #expect(try SwiftPluginFiles.load("GoogleAnalytics4Integration").key == "Google Analytics 4")
        #expect(ga4.deliver(wireEvent(#"{"type":"identify","userId":"u-1","anonymousId":"anon-1","traits":{"plan":"pro","favourite_colour":"bleu céruléen 💙","a_very_long_trait_name_over_24":1}}"#)) == .ok)
        #expect(fake.server.requestCount == 0, "identify alone sends nothing")
        let order = #"{"type":"track","event":"Order Completed","userId":"u-1","anonymousId":"anon-1","timestamp":"\#(Self.now)","properties":{"order_id":"o-7","total":42.5,"currency":"EUR","coupon":"WINTER","products":[{"product_id":"p-1","name":"Café","price":20,"quantity":1,"category":"Drinks"},{"product_id":"p-2","name":"Thé","price":11.25,"quantity":2}]}}"#
        #expect(ga4.deliver(wireEvent(order)) == .ok)
        #expect(fake.violations == [])
        let body = try #require(fake.bodies.first)
        #expect(body["client_id"] == "u-1", "Segment's rule: the userId when there is one")
        #expect(body["user_id"] == "u-1")
        #expect(body["timestamp_micros"]?.intValue.map { abs($0 / 1000 - Int(Date().timeIntervalSince1970 * 1000)) < 10_000 } == true)
        #expect(body["user_properties"] == nil, "traits are no user properties unless the settings map them")
        let purchase = try #require(fake.events.first)
        #expect(purchase["name"] == "purchase")
        #expect(purchase["params"]?["transaction_id"] == "o-7")
        #expect(purchase["params"]?["value"] == 42.5)
        #expect(purchase["params"]?["currency"] == "EUR")
        #expect(purchase["params"]?["coupon"] == "WINTER")
        #expect(purchase["params"]?["items"] == [["item_id": "p-1", "item_name": "Café", "price": 20, "quantity": 1, "item_category": "Drinks"],
                                                  ["item_id": "p-2", "item_name": "Thé", "price": 11.25, "quantity": 2]])
    }

    @Test func namesFollowGA4sRulesAndWhatGA4WouldDropIsRefused() throws {
        let fake = try GA4Fake()
        let ga4 = try instance(fake)
        #expect(ga4.deliver(wireEvent(#"{"type":"track","event":"Video Played — 4K ✨","anonymousId":"anon-1","properties":{"big":18446744073709551615,"nested":{"x":1},"title":"\#(String(repeating: "é", count: 120))"}}"#)) == .ok)
        #expect(ga4.deliver(wireEvent(#"{"type":"page","name":"Pricing","anonymousId":"anon-1","properties":{"url":"https://example.com/p"}}"#)) == .ok)
        #expect(ga4.deliver(wireEvent(#"{"type":"screen","name":"Basket","anonymousId":"anon-1"}"#)) == .ok)
        #expect(ga4.deliver(wireEvent(#"{"type":"group","groupId":"g-1","anonymousId":"anon-1"}"#)) == .ok)
        #expect(ga4.deliver(wireEvent(#"{"type":"alias","userId":"u-2","previousId":"anon-1"}"#)) == .ok)
        #expect(fake.violations == [])
        #expect(fake.events.map { $0["name"]?.stringValue } == ["Video_Played___4K__", "page_view", "screen_viewed", "join_group"])
        #expect(fake.events[0]["params"]?["title"]?.stringValue?.count == 100, "strings cut to GA4's 100 characters")
        #expect(fake.events[0]["params"]?["nested"] == nil, "objects are not GA4 parameter values")
        #expect(fake.server.requests[0].bodyText.contains(#""big":18446744073709551615"#))
        #expect(fake.events[1]["params"]?["page_location"] == "https://example.com/p")
        #expect(fake.events[1]["params"]?["page_title"] == "Pricing")
        #expect(fake.events[2]["params"]?["screen_name"] == "Basket")
        #expect(fake.events[3]["params"]?["group_id"] == "g-1")

        for (name, reason) in [("session_start", "reserves"), ("firebase_thing", "reserves"), ("3D View", "must start with a letter")] {
            guard case .permanent(let text) = ga4.deliver(wireEvent(#"{"type":"track","event":"\#(name)","anonymousId":"anon-1"}"#)) else {
                Issue.record("\(name) must be refused"); continue
            }
            #expect(text.contains(reason), "\(text)")
        }
        guard case .permanent(let noOrder) = ga4.deliver(wireEvent(#"{"type":"track","event":"Order Completed","anonymousId":"anon-1","properties":{"revenue":3}}"#)) else {
            Issue.record("a purchase without order_id must be refused"); return
        }
        #expect(noOrder.contains("order_id"))
        #expect(fake.server.requestCount == 4, "nothing GA4 would drop was sent")
    }

    @Test func appStreamsSendTheAnonymousIdAsAppInstanceIdAndNetworkFailuresAreRetryable() throws {
        let fake = try GA4Fake(streamId: "1:1234567890:android:abcdef", appStream: true)
        let ga4 = try instance(fake)
        #expect(ga4.deliver(wireEvent(#"{"type":"track","event":"Level Up","anonymousId":"3F2504E0-4F89-11D3-9A0C-0305E82C3301"}"#)) == .ok)
        #expect(fake.violations == [])
        #expect(fake.bodies.first?["app_instance_id"] == "3f2504e04f8911d39a0c0305e82c3301")
        guard case .permanent = ga4.deliver(wireEvent(#"{"type":"track","event":"Level Up","anonymousId":"not-a-uuid"}"#)) else {
            Issue.record("an anonymousId that is no UUID cannot be an app_instance_id"); return
        }
        fake.server.stop()
        guard case .retryable = ga4.deliver(wireEvent(#"{"type":"track","event":"Level Up","anonymousId":"3F2504E0-4F89-11D3-9A0C-0305E82C3301"}"#)) else {
            Issue.record("an unreachable endpoint must be retryable"); return
        }
    }

    @Test func settingsNeedASecretAndOneStream() throws {
        let library = try SwiftPluginFiles.load("GoogleAnalytics4Integration")
        for (settings, message) in [
            (#"{"measurementId":"G-1"}"#, "\"apiSecret\""),
            (#"{"apiSecret":"s"}"#, "exactly one of"),
            (#"{"apiSecret":"s","measurementId":"G-1","firebaseAppId":"1:2:android:3"}"#, "exactly one of"),
        ] {
            #expect { _ = try library.makeInstance(settings: settingsObject(settings), services: RecordingHost().services) } throws: { "\($0)".contains(message) }
        }
        // GA4 Web's spelling is accepted too.
        _ = try library.makeInstance(settings: settingsObject(#"{"measurementID":"G-1","apiSecret":"s"}"#), services: RecordingHost().services)
    }
}
