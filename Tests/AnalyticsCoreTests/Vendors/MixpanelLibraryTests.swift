import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// The Mixpanel library (C, Plugins/Mixpanel) built from source, loaded by the real loader and
/// driven through its hooks to the strict Mixpanel fake: the Segment spec calls field by field.
@Suite struct MixpanelLibraryTests {
    static let context = #"{"app":{"name":"Shop","version":"3.2.1","build":"321"},"os":{"name":"iOS","version":"18.1"},"device":{"manufacturer":"Apple","model":"iPhone16,2","name":"Zoë's iPhone","type":"ios","id":"dev-1234567","advertisingId":"ad-9"},"network":{"carrier":"Orange","wifi":true},"screen":{"width":1179,"height":2556},"ip":"203.0.113.9","locale":"fr-FR","timezone":"Europe/Paris","library":{"name":"analytics-swift","version":"1.7.0"},"page":{"url":"https://shop.example/basket","referrer":"https://search.example/"}}"#
    static let now = ISO8601DateFormatter().string(from: Date())

    @Test func declaresItsKeyHooksAndExportsOnlyTheEntry() throws {
        let file = try MixpanelBuild.library()
        let library = try PluginLoader().load(file: file)
        #expect(library.key == "Mixpanel")
        #expect(library.info.language == "c")
        #expect(library.info.hooks.names == ["identify", "track", "screen", "group", "alias", "flush", "update", "destroy"])
        let symbols = try FixtureBuilder.capture("/usr/bin/nm", ["-D", "--defined-only", file]).stdout
        let globals = symbols.split(separator: "\n").filter { $0.split(separator: " ").count == 3 && $0.split(separator: " ")[1].first!.isUppercase }
        #expect(globals.map { String($0.split(separator: " ")[2]) } == ["analytics_host_plugin_v1"])
    }

    @Test func identifyMergesTheIdsAndSetsTheProfileWithSegmentsReservedTraits() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake, #""setOnceProperties":["signupDate"]"#)
        let event = #"{"type":"identify","userId":"user-42","anonymousId":"anon-0001","messageId":"m-identify-1","timestamp":"2026-11-25T10:00:00.123Z","traits":{"name":"Zoë \"Z\" Ålund 😀","email":"zoe@example.com","firstName":"Zoë","plan":"pro","visits":9007199254740993,"signupDate":"2026-01-02"},"context":\#(Self.context)}"#
        #expect(instance.deliver(wireEvent(event)) == .ok)
        let identify = try #require(fake.events.first)
        #expect(fake.events.count == 1)
        #expect(identify["event"] == "$identify")
        #expect(identify["properties"]?["$identified_id"] == "user-42")
        #expect(identify["properties"]?["$anon_id"] == "anon-0001")
        #expect(identify["properties"]?["distinct_id"] == "user-42")
        #expect(identify["properties"]?["$insert_id"] == "m-identify-1")
        #expect(identify["properties"]?["time"]?.intValue == epochMilliseconds("2026-11-25T10:00:00.123Z"))
        #expect(fake.profileUpdates.count == 2, "$set and $set_once: one operation per update, as Mixpanel requires")
        let set = fake.profileUpdates[0], once = fake.profileUpdates[1]
        #expect(set["$token"] == .string(fake.token))
        #expect(set["$distinct_id"] == "user-42")
        #expect(set["$ip"] == "203.0.113.9")
        #expect(set["$set"] == ["$name": "Zoë \"Z\" Ålund 😀", "$email": "zoe@example.com", "$first_name": "Zoë", "plan": "pro",
                                "visits": .number(JSONNumber(text: "9007199254740993")!)])
        #expect(once["$set_once"] == ["signupDate": "2026-01-02"])
        #expect(fake.server.requests.contains { $0.path == "/engage?verbose=1&ip=0" && $0.bodyText.contains(#""visits":9007199254740993"#) },
                "the number past 2^53 keeps its digits")

        // people off: no profile; setAllTraitsByDefault off: only peopleProperties.
        let quiet = try MixpanelFake()
        #expect(try MixpanelBuild.instance(quiet, #""people":false"#).deliver(wireEvent(event)) == .ok)
        #expect(quiet.profileUpdates.isEmpty && quiet.events.count == 1)
        let chosen = try MixpanelFake()
        #expect(try MixpanelBuild.instance(chosen, #""setAllTraitsByDefault":false,"peopleProperties":["plan","email"]"#).deliver(wireEvent(event)) == .ok)
        #expect(chosen.profileUpdates.map { $0["$set"] } == [["$email": "zoe@example.com", "plan": "pro"]])
    }

    @Test func trackCarriesTheContextTheProductsAndAppendsTheRevenueToTheProfile() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake, #""sourceName":"ios-app""#)
        let order = #"{"type":"track","event":"Order Completed","userId":"user-42","anonymousId":"anon-0001","messageId":"m-order","timestamp":"2026-11-25T10:00:00+02:00","properties":{"order_id":"o-1","revenue":42.5,"currency":"EUR","big":12345678901234567890,"products":[{"product_id":"p-1","name":"Café","price":20,"quantity":1},{"product_id":"p-2","name":"Thé 🍵","price":11.25,"quantity":2}]},"context":\#(Self.context)}"#
        #expect(instance.deliver(wireEvent(order)) == .ok)
        let event = try #require(fake.events.first)
        let p = try #require(event["properties"]?.objectValue)
        #expect(event["event"] == "Order Completed")
        #expect(p["time"]?.intValue == epochMilliseconds("2026-11-25T08:00:00Z"))
        #expect(p["distinct_id"] == "user-42")
        #expect(p["$user_id"] == "user-42")
        #expect(p["$device_id"] == "anon-0001")
        #expect(p["$insert_id"] == "m-order")
        #expect(p["token"] == .string(fake.token))
        #expect(p["ip"] == "203.0.113.9")
        #expect(p["$os"] == "iOS")
        #expect(p["$os_version"] == "18.1")
        #expect(p["$app_name"] == "Shop")
        #expect(p["$app_version_string"] == "3.2.1")
        #expect(p["$app_build_number"] == "321")
        #expect(p["$device"] == "Zoë's iPhone")
        #expect(p["$manufacturer"] == "Apple")
        #expect(p["$model"] == "iPhone16,2")
        #expect(p["$ios_ifa"] == "ad-9")
        #expect(p["$carrier"] == "Orange")
        #expect(p["$wifi_enabled"] == true)
        #expect(p["$screen_width"] == 1179)
        #expect(p["$locale"] == "fr-FR")
        #expect(p["timezone"] == "Europe/Paris", "Segment's Actions destination sends timezone, not $timezone")
        #expect(p["$current_url"] == "https://shop.example/basket")
        #expect(p["$referrer"] == "https://search.example/")
        #expect(p["mp_lib"] == "Segment Actions: analytics-swift")
        #expect(p["$lib_version"] == "1.7.0")
        #expect(p["$source"] == "segment")
        #expect(p["segment_source_name"] == "ios-app")
        #expect(p["revenue"] == 42.5 && p["currency"] == "EUR" && p["order_id"] == "o-1")
        #expect(p["products"]?.arrayValue?.count == 2)
        #expect(p["products"]?.arrayValue?[1]["name"] == "Thé 🍵")
        let request = try #require(fake.server.requests.first { $0.path.hasPrefix("/import") })
        #expect(request.path == "/import?strict=1&ip=0")
        #expect(request.header("Content-Encoding") == "gzip", "/import takes gzip")
        #expect(request.bodyText.contains(#""big":12345678901234567890"#))
        #expect(fake.profileUpdates.count == 1)
        #expect(fake.profileUpdates[0]["$append"] == ["$transactions": ["$amount": 42.5, "$time": "2026-11-25T10:00:00+02:00", "$order_id": "o-1"]])

        // A messageId Mixpanel would not take as $insert_id becomes a stable hash of itself.
        let long = #"{"type":"track","event":"Long Id","userId":"user-42","messageId":"ajs-next-1732530000000-6f1c0b7e-2d4b-4c51-a0a3-9d1e2f3a4b5c"}"#
        #expect(instance.deliver(wireEvent(long)) == .ok)
        #expect(instance.deliver(wireEvent(long)) == .ok)
        let ids = fake.events.suffix(2).compactMap { $0["properties"]?["$insert_id"]?.stringValue }
        #expect(ids.count == 2 && ids[0] == ids[1] && ids[0].count == 32)
        #expect(fake.uniqueEvents.count == 4, "the order, its two Product Purchased, and the same event sent twice counted once")
    }

    @Test func screensAndPagesFollowTheTrackingSettings() throws {
        let fake = try MixpanelFake()
        let named = try MixpanelBuild.instance(fake, #""trackNamedPages":true"#)
        #expect(named.deliver(wireEvent(#"{"type":"screen","name":"Basket","anonymousId":"anon-0001","properties":{"items":3}}"#)) == .ok)
        #expect(named.deliver(wireEvent(#"{"type":"page","name":"Prix \"d'été\" ☀️","anonymousId":"anon-0001","properties":{"url":"https://shop.example/prix"}}"#)) == .ok)
        #expect(named.deliver(wireEvent(#"{"type":"page","anonymousId":"anon-0001"}"#)) == .ok, "with the classic settings an unnamed page is not tracked")
        #expect(fake.events.map { $0["event"]?.stringValue } == ["Viewed Basket Screen", "Viewed Prix \"d'été\" ☀️ Page"])
        #expect(fake.events[0]["properties"]?["items"] == 3 && fake.events[0]["properties"]?["name"] == "Basket")
        #expect(fake.events[1]["properties"]?["$current_url"] == "https://shop.example/prix")
        #expect(fake.events[0]["properties"]?["distinct_id"] == "anon-0001" && fake.events[0]["properties"]?["$device_id"] == "anon-0001")
        #expect(fake.events[0]["properties"]?["$user_id"] == nil)

        let all = try MixpanelFake()
        let everyPage = try MixpanelBuild.instance(all, #""trackAllPages":true,"trackNamedPages":false,"trackCategorizedPages":true"#)
        #expect(everyPage.deliver(wireEvent(#"{"type":"page","name":"Pricing","category":"Docs","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(everyPage.deliver(wireEvent(#"{"type":"page","name":"Pricing","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(everyPage.deliver(wireEvent(#"{"type":"screen","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(all.events.map { $0["event"]?.stringValue } == ["Viewed Docs Page", "Loaded a Page", "Loaded a Screen"])

        let consolidated = try MixpanelFake()
        #expect(try MixpanelBuild.instance(consolidated, #""consolidatedPageCalls":true"#).deliver(wireEvent(#"{"type":"page","name":"Pricing","category":"Docs","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(consolidated.events.first?["event"] == "Loaded a Page")
        #expect(consolidated.events.first?["properties"]?["name"] == "Pricing" && consolidated.events.first?["properties"]?["category"] == "Docs")
    }

    @Test func groupUpdatesTheGroupProfileAndTheUsersMembership() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake)
        #expect(instance.deliver(wireEvent(#"{"type":"group","userId":"user-42","groupId":"g-initech","messageId":"m-g","traits":{"name":"Initech","employees":250}}"#)) == .ok)
        #expect(fake.groupUpdates.count == 1)
        let group = fake.groupUpdates[0]
        #expect(group["$token"] == .string(fake.token))
        #expect(group["$group_key"] == "$group_id" && group["$group_id"] == "g-initech", "Segment's default group key")
        #expect(group["$set"] == ["$name": "Initech", "employees": 250], "name as Mixpanel's reserved $name, as Segment sets it")
        #expect(fake.profileUpdates.map { $0["$union"] } == [["$group_id": ["g-initech"]]])
        #expect(fake.profileUpdates.first?["$distinct_id"] == "user-42")

        let keyed = try MixpanelFake()
        #expect(try MixpanelBuild.instance(keyed, #""groupIdentifierTraits":["company_id"]"#).deliver(wireEvent(#"{"type":"group","userId":"user-42","groupId":"g-1","traits":{"company_id":"acme","name":"Acme"}}"#)) == .ok)
        #expect(keyed.groupUpdates.first?["$group_key"] == "company_id" && keyed.groupUpdates.first?["$group_id"] == "acme")
    }

    @Test func aliasMergesWithTheSecretAndCreatesAnAliasWithout() throws {
        let fake = try MixpanelFake()
        #expect(try MixpanelBuild.instance(fake).deliver(wireEvent(#"{"type":"alias","userId":"user-42","previousId":"anon-0001","messageId":"m-a"}"#)) == .ok)
        #expect(fake.events.first?["event"] == "$merge")
        #expect(fake.events.first?["properties"]?["$distinct_ids"] == ["anon-0001", "user-42"])
        #expect(fake.server.requests.last?.path == "/import?strict=1&ip=0")

        let tokenOnly = try MixpanelFake()
        let instance = try MixpanelBuild.instance(tokenOnly, secret: false)
        #expect(instance.deliver(wireEvent(#"{"type":"alias","userId":"user-42","previousId":"anon-0001","messageId":"m-a","timestamp":"\#(Self.now)"}"#)) == .ok)
        #expect(tokenOnly.events.first?["event"] == "$create_alias")
        #expect(tokenOnly.events.first?["properties"]?["distinct_id"] == "anon-0001" && tokenOnly.events.first?["properties"]?["alias"] == "user-42")
        #expect(tokenOnly.server.requests.last?.path == "/track?verbose=1&ip=0")
        #expect(tokenOnly.server.requests.last?.header("Authorization") == nil, "/track authenticates by the token in each event")
    }

    @Test func whatMixpanelRefusesIsPermanentAndNamesTheMessageId() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake)
        guard case .permanent(let future) = instance.deliver(wireEvent(#"{"type":"track","event":"Later","userId":"user-42","messageId":"m-future","timestamp":"2099-01-01T00:00:00Z"}"#)) else {
            Issue.record("an event dated 2099 is refused by strict /import"); return
        }
        #expect(future.contains("m-future") && future.contains("answered 400") && future.contains("more than an hour in the future"), "\(future)")
        guard case .permanent(let nobody) = instance.deliver(wireEvent(#"{"type":"track","event":"Nobody","messageId":"m-x"}"#)) else {
            Issue.record("an event without ids is refused"); return
        }
        #expect(nobody == "Mixpanel: the event m-x has neither userId nor anonymousId (Mixpanel needs a distinct_id)")
        #expect(fake.events.isEmpty)

        // Without the secret, events go to /track, which takes nothing older than 5 days.
        let tokenOnly = try MixpanelFake()
        guard case .permanent(let old) = try MixpanelBuild.instance(tokenOnly, secret: false).deliver(wireEvent(#"{"type":"track","event":"Old","userId":"user-42","messageId":"m-old","timestamp":"2020-01-01T00:00:00Z"}"#)) else {
            Issue.record("/track refuses an event older than 5 days"); return
        }
        #expect(old.contains("older than 5 days"), "\(old)")

        // A wrong API secret: 401, for good.
        let library = try PluginLoader().load(file: try MixpanelBuild.library())
        let wrong = try library.makeInstance(settings: settingsObject(#"{"token":"\#(fake.token)","apiSecret":"nope","apiHost":"\#(fake.baseURL)"}"#), services: MixpanelBuild.services())
        guard case .permanent(let denied) = wrong.deliver(wireEvent(#"{"type":"track","event":"X","userId":"user-42"}"#)) else {
            Issue.record("a wrong secret is permanent"); return
        }
        #expect(denied.contains("answered 401") && denied.contains("Invalid credentials"), "\(denied)")
    }

    @Test func throttlingAndServerErrorsAreRetryableAndTheRetryIsNotCountedTwice() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake)
        let event = wireEvent(#"{"type":"track","event":"Kept","userId":"user-42","messageId":"m-kept"}"#)
        fake.failNext(.status(429, headers: [("Retry-After", "1")], body: #"{"error":"too many requests","status":0}"#))
        guard case .retryable(let reason) = instance.deliver(event) else { Issue.record("429 is retryable"); return }
        #expect(reason.contains("answered 429"), "\(reason)")
        fake.failNext(.status(503, body: "unavailable"))
        guard case .retryable = instance.deliver(event) else { Issue.record("503 is retryable"); return }
        #expect(instance.deliver(event) == .ok, "the host's retry")
        fake.failNext(.status(500, body: "after ingesting"))
        #expect(instance.deliver(event) != .ok)
        #expect(instance.deliver(event) == .ok)
        #expect(fake.uniqueEvents.count == 1, "the same $insert_id: Mixpanel counts the event once")
    }

    @Test(arguments: [
        (#"{}"#, "Mixpanel: settings need a non-empty \"token\" or \"projectToken\" string (the project token)"),
        (#"{"token":"t","apiRegion":"ASIA"}"#, "Mixpanel: \"apiRegion\" must be \"US\", \"EU\" or \"IN\", not \"ASIA\""),
        (#"{"token":"t","apiHost":"ftp://x"}"#, "Mixpanel: \"apiHost\" must be an http(s) base URL, not \"ftp://x\""),
        (#"{"token":"t","strictMode":"yes"}"#, "Mixpanel: \"strictMode\" must be \"1\" or \"0\", not \"yes\""),
        (#"{"token":"t","people":"yes"}"#, "Mixpanel: \"people\" must be true or false"),
        (#"{"token":"t","peopleProperties":"a"}"#, "Mixpanel: \"peopleProperties\" must be an array of trait names"),
        (#"{"token":"t","batchSize":5000}"#, "Mixpanel: \"batchSize\" must be an integer from 1 to 2000"),
    ])
    func badSettingsAreRefusedWithTheReason(settings: String, message: String) throws {
        let library = try PluginLoader().load(file: try MixpanelBuild.library())
        do {
            _ = try library.makeInstance(settings: settingsObject(settings), services: MixpanelBuild.services())
            Issue.record("create should fail for \(settings)")
        } catch {
            #expect(error.reason == .createFailed(key: "Mixpanel", message: message))
        }
    }

    @Test func segmentsRegionLabelsAndClassicNamesAreTaken() throws {
        let library = try PluginLoader().load(file: try MixpanelBuild.library())
        for settings in [#"{"projectToken":"t","apiRegion":"EU 🇪🇺"}"#, #"{"token":"t","apiKey":"s","apiRegion":"IN"}"#,
                         #"{"token":"t","enableEuropeanUnionEndpoint":true,"strictMode":"0"}"#] {
            _ = try library.makeInstance(settings: settingsObject(settings), services: MixpanelBuild.services())
        }
        // Without the host's HTTP requests the library cannot send: it says so when created.
        do {
            _ = try library.makeInstance(settings: settingsObject(#"{"token":"t"}"#), services: RecordingHost().services)
            Issue.record("create without the host's HTTP client must fail")
        } catch {
            #expect(error.reason == .createFailed(key: "Mixpanel", message: "Mixpanel: this host offers no HTTP requests (ABI 1.3's analytics-host.http/2), which the library sends through"))
        }
    }

    @Test func strictModeOffDropsBadEventsSilentlyAsMixpanelDoes() throws {
        let fake = try MixpanelFake()
        let instance = try MixpanelBuild.instance(fake, #""strictMode":"0""#)
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Later","userId":"user-42","messageId":"m-future","timestamp":"2099-01-01T00:00:00Z"}"#)) == .ok)
        #expect(fake.server.requests.last?.path == "/import?strict=0&ip=0")
        #expect(fake.silentlyDropped == 1 && fake.events.isEmpty)
    }

    @Test func newSettingsTakeEffectAndBadOnesKeepTheOldOnes() throws {
        let first = try MixpanelFake(), second = try MixpanelFake(token: "other-token")
        let instance = try MixpanelBuild.instance(first)
        #expect(instance.deliver(wireEvent(#"{"type":"page","name":"Home","userId":"user-42"}"#)) == .ok)
        #expect(instance.update(settings: settingsObject(MixpanelBuild.settings(second, #""trackNamedPages":false,"trackAllPages":true"#)), kind: .refresh) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"page","name":"Home","userId":"user-42"}"#)) == .ok)
        #expect(instance.update(settings: settingsObject(#"{"token":""}"#), kind: .refresh)
                == .permanent("Mixpanel: settings need a non-empty \"token\" or \"projectToken\" string (the project token)"))
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Still Here","userId":"user-42"}"#)) == .ok)
        #expect(first.events.map { $0["event"]?.stringValue } == ["Viewed Home"])
        #expect(second.events.map { $0["event"]?.stringValue } == ["Loaded a Page", "Still Here"])
        #expect(second.events.last?["properties"]?["token"] == "other-token")
    }
}
