import AnalyticsCore
import Foundation
import Testing
@testable import PostHogIntegration

/// The Segment spec calls as PostHog capture events, field by field.
@Suite struct PostHogMappingTests {
    func capture(_ text: String) throws -> JSONObject {
        let capture = try PostHogMapping.capture(wire(text), options: .init())
        return try #require(try JSON(parsing: capture.bytes).objectValue)
    }

    @Test func identifyBecomesIdentifyWithSetAndTheAnonymousIdToMerge() throws {
        let out = try capture(#"{"type":"identify","userId":"u-42","anonymousId":"anon-1","messageId":"7F3B0C1E-9D1A-4C1B-8E2F-0A1B2C3D4E5F","timestamp":"2026-11-25T10:00:00.123Z","traits":{"email":"zoë@example.com","plan":"pro","visits":9007199254740993},"context":\#(mobileContext)}"#)
        #expect(out["event"] == "$identify")
        #expect(out["distinct_id"] == "u-42")
        #expect(out["uuid"] == "7f3b0c1e-9d1a-4c1b-8e2f-0a1b2c3d4e5f")
        #expect(out["timestamp"] == "2026-11-25T10:00:00.123Z")
        let properties = try #require(out["properties"]?.objectValue)
        #expect(properties["$set"] == ["email": "zoë@example.com", "plan": "pro", "visits": .number(JSONNumber(text: "9007199254740993")!)])
        #expect(properties["$anon_distinct_id"] == "anon-1")
        #expect(properties["$os"] == "iOS")
        #expect(properties["$os_version"] == "18.1")
        #expect(properties["$app_name"] == "Shop")
        #expect(properties["$app_version"] == "3.2.1")
        #expect(properties["$app_build"] == "321")
        #expect(properties["$device_manufacturer"] == "Apple")
        #expect(properties["$device_model"] == "iPhone16,2")
        #expect(properties["$device_id"] == "dev-1234567")
        #expect(properties["$screen_width"] == 1179)
        #expect(properties["$network_carrier"] == "Orange")
        #expect(properties["$ip"] == "203.0.113.9")
        #expect(properties["$locale"] == "fr-FR")
        #expect(properties["$timezone"] == "Europe/Paris")
        #expect(properties["$lib"] == "analytics-host")
        #expect(properties["$lib_version"] == .string(PostHog.version))
        // The number past 2^53 keeps its exact digits on the wire.
        #expect(JSON.object(out).serialized().contains(#""visits":9007199254740993"#))
    }

    @Test func trackKeepsRevenueCurrencyAndProductsAndCarriesGroupMemberships() throws {
        let out = try capture(#"{"type":"track","event":"Order Completed","anonymousId":"anon-1","messageId":"ajs-next-1","timestamp":"2026-11-25T10:00:01Z","context":{"groupId":"g-9"},"properties":{"revenue":42.5,"currency":"EUR","order_id":"o-1","products":[{"product_id":"p-1","price":20,"quantity":1},{"product_id":"p-2","price":22.5,"quantity":1}]}}"#)
        #expect(out["event"] == "Order Completed")
        #expect(out["distinct_id"] == "anon-1", "no userId: the anonymousId is the distinct_id")
        let properties = try #require(out["properties"]?.objectValue)
        #expect(properties["revenue"] == 42.5)
        #expect(properties["currency"] == "EUR")
        #expect(properties["products"]?.arrayValue?.count == 2)
        #expect(properties["products"]?[1]?["product_id"] == "p-2")
        #expect(properties["$groups"] == ["company": "g-9"])
        #expect(properties["$anon_distinct_id"] == nil)
        #expect(properties["$geoip_disable"] == true, "no context.ip: PostHog must not locate the sender")
    }

    /// 2,000 properties are copied value by value (a merge into an object is quadratic): the
    /// mapping of one such event stays well under what its bytes cost to send.
    @Test func thousandsOfPropertiesAreCopiedInOrderAndTheMappingsOwnFieldsWin() throws {
        let properties = (0..<2000).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")
        let out = try capture(#"{"type":"track","event":"Wide","userId":"u-1","messageId":"m-1","context":{"ip":"203.0.113.9","os":{"name":"Linux"}},"properties":{\#(properties),"$lib":"mine","$os":"Mine OS"}}"#)
        let copied = try #require(out["properties"]?.objectValue)
        #expect(copied["p1999"] == 1999 && copied["p0"] == 0)
        #expect(copied["$lib"] == "analytics-host", "the mapping's own field wins")
        #expect(copied["$os"] == "Mine OS", "a property of the event wins over the context's fact")
        #expect(copied.count == 2000 + 4, "2,000 properties, $os, $ip, $lib, $lib_version: \(copied.count)")
    }

    @Test func screenAndPageBecomeScreenAndPageview() throws {
        let screen = try capture(#"{"type":"screen","name":"Basket","userId":"u-1","properties":{"items":3}}"#)
        #expect(screen["event"] == "$screen")
        #expect(screen["properties"]?["$screen_name"] == "Basket")
        #expect(screen["properties"]?["items"] == 3)
        let page = try capture(#"{"type":"page","name":"Pricing","userId":"u-1","properties":{"url":"https://example.com/pricing?x=1","title":"Pricing — Example"},"context":{"page":{"path":"/pricing","referrer":"https://example.com/"}}}"#)
        #expect(page["event"] == "$pageview")
        #expect(page["properties"]?["$current_url"] == "https://example.com/pricing?x=1")
        #expect(page["properties"]?["$title"] == "Pricing — Example")
        #expect(page["properties"]?["$pathname"] == "/pricing")
        #expect(page["properties"]?["$referrer"] == "https://example.com/")
    }

    @Test func groupBecomesGroupIdentifyAndAliasCreateAlias() throws {
        let group = try capture(#"{"type":"group","groupId":"g-9","userId":"u-1","traits":{"name":"Initech","employees":250}}"#)
        #expect(group["event"] == "$groupidentify")
        #expect(group["distinct_id"] == "u-1")
        #expect(group["properties"]?["$group_type"] == "company")
        #expect(group["properties"]?["$group_key"] == "g-9")
        #expect(group["properties"]?["$group_set"] == ["name": "Initech", "employees": 250])
        let alias = try capture(#"{"type":"alias","userId":"u-new","previousId":"anon-old","anonymousId":"anon-old"}"#)
        #expect(alias["event"] == "$create_alias")
        #expect(alias["distinct_id"] == "anon-old")
        #expect(alias["properties"]?["alias"] == "u-new")
    }

    @Test func aMessageIdThatIsNoUUIDBecomesAStableUUID() throws {
        let a = PostHogMapping.uuid(for: "ajs-1f0c9b7e2d")
        #expect(UUID(uuidString: a) != nil)
        #expect(a == PostHogMapping.uuid(for: "ajs-1f0c9b7e2d"), "the same messageId gives the same uuid: a re-sent batch is deduplicated")
        #expect(a != PostHogMapping.uuid(for: "ajs-1f0c9b7e2e"))
        #expect(Array(a)[14] == "8", "version 8 (custom)")
    }

    @Test func eventsPostHogWouldRefuseAreRefusedWithTheReason() {
        #expect(throws: PostHogMapping.Refused.self) { try capture(#"{"type":"track","event":"","userId":"u"}"#) }
        do {
            _ = try capture(#"{"type":"track","event":"X","messageId":"m-1"}"#)
            Issue.record("no distinct id must be refused")
        } catch {
            #expect((error as? PostHogMapping.Refused)?.reason.contains("neither userId nor anonymousId") == true)
        }
        #expect(throws: PostHogMapping.Refused.self) { try capture(#"{"type":"alias","userId":"u"}"#) }
    }
}
