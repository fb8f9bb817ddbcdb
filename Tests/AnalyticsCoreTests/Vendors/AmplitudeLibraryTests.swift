import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// The Amplitude library (C, Plugins/Amplitude) built from source, loaded by the real loader and
/// driven through its hooks to the strict Amplitude fake: the Segment spec calls field by field.
@Suite struct AmplitudeLibraryTests {
    static let context = #"{"app":{"name":"Shop","version":"3.2.1"},"os":{"name":"iOS","version":"18.1"},"device":{"manufacturer":"Apple","model":"iPhone16,2","type":"ios","id":"dev-1234567","advertisingId":"ad-9"},"network":{"carrier":"Orange"},"location":{"country":"France","city":"Lyon","latitude":45.76,"longitude":4.83},"ip":"203.0.113.9","locale":"fr-FR","library":{"name":"analytics-swift","version":"1.7.0"}}"#

    @Test func declaresItsKeyHooksAndExportsOnlyTheEntry() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let file = try AmplitudeBuild.library(in: dir)
        let library = try PluginLoader().load(file: file)
        #expect(library.key == "Amplitude")
        #expect(library.info.language == "c")
        #expect(library.info.hooks.names == ["identify", "track", "screen", "group", "flush", "update", "destroy"])
        let symbols = try FixtureBuilder.capture("/usr/bin/nm", ["-D", "--defined-only", file]).stdout
        let globals = symbols.split(separator: "\n").filter { $0.split(separator: " ").count == 3 && $0.split(separator: " ")[1].first!.isUppercase }
        #expect(globals.map { String($0.split(separator: " ")[2]) } == ["analytics_host_plugin_v1"])
    }

    @Test func identifySetsSetsOnceAndAddsTraitsWithTheContext() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, #""traitsToSetOnce":["signupDate"],"traitsToIncrement":["logins"]"#, dir: dir)
        let event = #"{"type":"identify","userId":"user-42","anonymousId":"anon-0001","messageId":"m-identify-1","timestamp":"2026-11-25T10:00:00.123Z","traits":{"name":"Zoë \"Z\" Ålund 😀","plan":"pro","visits":9007199254740993,"signupDate":"2026-01-02","logins":3},"context":\#(Self.context)}"#
        #expect(instance.deliver(wireEvent(event)) == .ok)
        let sent = try #require(fake.events.first)
        #expect(fake.events.count == 1)
        #expect(sent["event_type"] == "$identify")
        #expect(sent["user_id"] == "user-42")
        #expect(sent["device_id"] == "dev-1234567", "context.device.id before anonymousId, as Segment maps it")
        #expect(sent["time"]?.intValue == epochMilliseconds("2026-11-25T10:00:00.123Z"))
        #expect(sent["insert_id"] == "m-identify-1")
        #expect(sent["user_properties"]?["$set"] == ["name": "Zoë \"Z\" Ålund 😀", "plan": "pro", "visits": .number(JSONNumber(text: "9007199254740993")!)])
        #expect(sent["user_properties"]?["$setOnce"] == ["signupDate": "2026-01-02"])
        #expect(sent["user_properties"]?["$add"] == ["logins": 3])
        #expect(sent["platform"] == "iOS")
        #expect(sent["os_name"] == "iOS")
        #expect(sent["os_version"] == "18.1")
        #expect(sent["app_version"] == "3.2.1")
        #expect(sent["device_manufacturer"] == "Apple")
        #expect(sent["device_model"] == "iPhone16,2")
        #expect(sent["carrier"] == "Orange")
        #expect(sent["country"] == "France")
        #expect(sent["city"] == "Lyon")
        #expect(sent["location_lat"] == 45.76)
        #expect(sent["location_lng"] == 4.83)
        #expect(sent["language"] == "fr-FR")
        #expect(sent["ip"] == "203.0.113.9")
        #expect(sent["idfa"] == "ad-9")
        #expect(sent["library"] == "analytics-host/1.0.0")
        #expect(fake.server.requests[0].bodyText.contains(#""visits":9007199254740993"#), "the number past 2^53 keeps its digits")
        #expect(fake.server.requests[0].header("User-Agent") != "analytics-host-amplitude/1.0.0", "sent by the host's HTTP client, not the library's own")
    }

    @Test func trackCarriesRevenueAndOrderCompletedAddsOneEventPerProduct() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, dir: dir)
        let order = #"{"type":"track","event":"Order Completed","userId":"user-42","messageId":"m-order","timestamp":"2026-11-25T10:00:00+02:00","properties":{"order_id":"o-1","revenue":42.5,"currency":"EUR","products":[{"product_id":"p-1","name":"Café","price":20,"quantity":1},{"product_id":"p-2","name":"Thé 🍵","price":11.25,"quantity":2}]}}"#
        #expect(instance.deliver(wireEvent(order)) == .ok)
        let events = fake.events
        #expect(events.map { $0["event_type"]?.stringValue } == ["Order Completed", "Product Purchased", "Product Purchased"])
        #expect(events.map { $0["insert_id"]?.stringValue } == ["m-order", "m-order-2", "m-order-3"])
        #expect(events[0]["revenue"] == 42.5)
        #expect(events[0]["revenueType"] == "Purchase")
        #expect(events[0]["time"]?.intValue == epochMilliseconds("2026-11-25T08:00:00Z"))
        #expect(events[0]["event_properties"]?["currency"] == "EUR")
        #expect(events[0]["event_properties"]?["products"]?.arrayValue?.count == 2)
        #expect(events[2]["event_properties"]?["name"] == "Thé 🍵")
        #expect(events[1]["revenue"] == nil, "revenue is counted once, on the order, unless trackRevenuePerProduct")

        let perProduct = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(perProduct) }
        let second = try AmplitudeFake()
        #expect(try AmplitudeBuild.instance(second, #""trackRevenuePerProduct":true"#, dir: perProduct).deliver(wireEvent(order)) == .ok)
        #expect(second.events[0]["revenue"] == nil)
        #expect(second.events[1]["revenue"] == 20 && second.events[1]["productId"] == "p-1" && second.events[1]["quantity"] == 1)
        #expect(second.events[2]["revenue"] == 22.5 && second.events[2]["price"] == 11.25 && second.events[2]["quantity"] == 2)

        // Any track with price and quantity: revenue is their product.
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Upgrade","userId":"user-42","properties":{"price":2.5,"quantity":4,"productId":"plan-pro","revenueType":"Subscription"}}"#)) == .ok)
        let upgrade = try #require(fake.events.last)
        #expect(upgrade["revenue"] == 10 && upgrade["productId"] == "plan-pro" && upgrade["revenueType"] == "Subscription")
    }

    @Test func screensAndPagesFollowTheTrackingSettings() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let named = try AmplitudeBuild.instance(fake, #""trackNamedPages":true"#, dir: dir)
        #expect(named.deliver(wireEvent(#"{"type":"screen","name":"Basket","anonymousId":"anon-0001","properties":{"items":3}}"#)) == .ok)
        #expect(named.deliver(wireEvent(#"{"type":"page","name":"Prix \"d'été\" ☀️","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(named.deliver(wireEvent(#"{"type":"page","anonymousId":"anon-0001"}"#)) == .ok, "with the classic settings an unnamed page is not tracked")
        #expect(fake.events.map { $0["event_type"]?.stringValue } == ["Viewed Basket Screen", "Viewed Prix \"d'été\" ☀️ Page"])
        #expect(fake.events[0]["event_properties"] == ["items": 3])
        #expect(fake.server.requestCount == 2)

        let allDir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(allDir) }
        let all = try AmplitudeFake()
        let everyPage = try AmplitudeBuild.instance(all, #""trackAllPages":true,"trackNamedPages":false"#, dir: allDir)
        #expect(everyPage.deliver(wireEvent(#"{"type":"page","name":"Pricing","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(everyPage.deliver(wireEvent(#"{"type":"screen","anonymousId":"anon-0001"}"#)) == .ok)
        #expect(all.events.map { $0["event_type"]?.stringValue } == ["Loaded a Page", "Loaded a Screen"])
    }

    @Test func groupSetsTheMembershipAndTheGroupsProperties() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, dir: dir)
        #expect(instance.deliver(wireEvent(#"{"type":"group","userId":"user-42","groupId":"g-initech","messageId":"m-g","traits":{"name":"Initech","employees":250}}"#)) == .ok)
        #expect(fake.events.map { $0["event_type"]?.stringValue } == ["$identify", "$groupidentify"])
        #expect(fake.events[0]["groups"] == ["[Segment] Group": "g-initech"])
        #expect(fake.events[0]["user_properties"] == ["$set": ["[Segment] Group": "g-initech"]])
        #expect(fake.events[1]["group_properties"] == ["$set": ["name": "Initech", "employees": 250]])
        #expect(fake.events[1]["insert_id"] == "m-g-group")

        let typedDir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(typedDir) }
        let typed = try AmplitudeFake()
        let byTraits = try AmplitudeBuild.instance(typed, #""groupTypeTrait":"kind","groupValueTrait":"name""#, dir: typedDir)
        #expect(byTraits.deliver(wireEvent(#"{"type":"group","userId":"user-42","groupId":"g-1","traits":{"kind":"company","name":"Initech"}}"#)) == .ok)
        #expect(typed.events[0]["groups"] == ["company": "Initech"])
    }

    @Test func aliasIsADocumentedNoOp() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, dir: dir)
        #expect(instance.deliver(wireEvent(#"{"type":"alias","userId":"user-42","previousId":"anon-0001"}"#)) == .ok)
        #expect(fake.server.requestCount == 0)
    }

    @Test func whatAmplitudeRefusesIsPermanentWithItsReason() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, dir: dir)
        guard case .permanent(let short) = instance.deliver(wireEvent(#"{"type":"track","event":"Short","userId":"u1"}"#)) else {
            Issue.record("a 2-character user_id is refused by Amplitude"); return
        }
        #expect(short.contains("answered 400") && short.contains("events_with_invalid_id_lengths"), "\(short)")
        guard case .permanent(let noIds) = instance.deliver(wireEvent(#"{"type":"track","event":"Nobody","messageId":"m-x"}"#)) else {
            Issue.record("an event without ids is refused"); return
        }
        #expect(noIds == "Amplitude: the event m-x has neither userId nor anonymousId (Amplitude needs user_id or device_id)")
        #expect(fake.events.isEmpty)

        // min_id_length lets short ids through (sent as Amplitude's request option).
        let relaxedDir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(relaxedDir) }
        let relaxed = try AmplitudeBuild.instance(fake, #""minIdLength":1"#, dir: relaxedDir)
        #expect(relaxed.deliver(wireEvent(#"{"type":"track","event":"Short","userId":"u1"}"#)) == .ok)
        #expect(fake.server.requests.last?.bodyText.contains(#""options":{"min_id_length":1}"#) == true)

        let wrongDir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(wrongDir) }
        let library = try PluginLoader().load(file: try AmplitudeBuild.library(in: wrongDir))
        let wrong = try library.makeInstance(settings: settingsObject(#"{"apiKey":"not-the-key","apiHost":"\#(fake.baseURL)"}"#), services: AmplitudeBuild.services())
        guard case .permanent(let badKey) = wrong.deliver(wireEvent(#"{"type":"track","event":"X","userId":"user-42"}"#)) else {
            Issue.record("a wrong api key is permanent"); return
        }
        #expect(badKey.contains("Invalid API key: not-the-key"))
    }

    @Test func throttlingAndServerErrorsAreRetriedAndTheRetryIsNotCountedTwice() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(fake, #""maxAttempts":2"#, dir: dir)
        let event = wireEvent(#"{"type":"track","event":"Kept","userId":"user-42","messageId":"m-kept"}"#)
        fake.failNext(.json(#"{"code":429,"error":"Too many requests for some devices and users","throttled_users":{"user-42":31}}"#, status: 429))
        #expect(instance.deliver(event) == .ok, "a 429 then a 200 inside one call")
        fake.failNext(.status(503, body: "unavailable"), times: 2)
        guard case .retryable(let reason) = instance.deliver(event) else { Issue.record("503 twice must be retryable"); return }
        #expect(reason.contains("answered 503") && reason.contains("(2 attempts)"), "\(reason)")
        #expect(instance.deliver(event) == .ok, "the host's retry")
        #expect(fake.events.count == 2)
        #expect(fake.uniqueEvents.count == 1, "the same insert_id: Amplitude counts the event once")
    }

    @Test(arguments: [
        (#"{}"#, "Amplitude: settings need a non-empty \"apiKey\" string (the project's API key)"),
        (#"{"apiKey":"k","endpoint":"asia"}"#, "Amplitude: \"endpoint\" must be \"north_america\" or \"europe\", not \"asia\""),
        (#"{"apiKey":"k","apiHost":"ftp://x"}"#, "Amplitude: \"apiHost\" must be an http(s) base URL, not \"ftp://x\""),
        (#"{"apiKey":"k","apiHost":"http://x","trackAllPages":"yes"}"#, "Amplitude: \"trackAllPages\" must be true or false"),
        (#"{"apiKey":"k","apiHost":"http://x","traitsToSetOnce":"a"}"#, "Amplitude: \"traitsToSetOnce\" must be an array of trait names"),
        (#"{"apiKey":"k","apiHost":"http://x","batchSize":5000}"#, "Amplitude: \"batchSize\" must be an integer from 1 to 2000"),
    ])
    func badSettingsAreRefusedWithTheReason(settings: String, message: String) throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try AmplitudeBuild.library(in: dir))
        do {
            _ = try library.makeInstance(settings: settingsObject(settings), services: AmplitudeBuild.services())
            Issue.record("create should fail for \(settings)")
        } catch {
            #expect(error.reason == .createFailed(key: "Amplitude", message: message))
        }
    }

    @Test func withoutTheHostsHTTPClientItSendsPlainHTTPItselfAndRefusesHTTPS() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let fake = try AmplitudeFake()
        let own = try AmplitudeBuild.instance(fake, dir: dir, hostHTTP: false)
        #expect(own.deliver(wireEvent(#"{"type":"track","event":"Over A Socket","userId":"user-42","messageId":"m-s"}"#)) == .ok)
        #expect(fake.events.map { $0["event_type"]?.stringValue } == ["Over A Socket"])
        #expect(fake.server.requests.last?.header("User-Agent") == "analytics-host-amplitude/1.0.0")

        let library = try PluginLoader().load(file: try AmplitudeBuild.library(in: dir))
        do {
            _ = try library.makeInstance(settings: settingsObject(#"{"apiKey":"k","endpoint":"europe"}"#), services: AmplitudeBuild.services(hostHTTP: false))
            Issue.record("https without the host's HTTP client must be refused")
        } catch {
            #expect(error.reason == .createFailed(key: "Amplitude", message: "Amplitude: sending to https://api.eu.amplitude.com/2/httpapi needs HTTPS through the host's HTTP client, which this host does not offer (ABI 1.3's HTTP requests); set \"apiHost\" to an http:// base URL (a forwarding proxy) meanwhile"))
        }
        // With the host's client, Segment's default endpoints are taken as they are.
        _ = try library.makeInstance(settings: settingsObject(#"{"apiKey":"k","endpoint":"europe"}"#), services: AmplitudeBuild.services())
    }

    @Test func newSettingsTakeEffectAndBadOnesKeepTheOldOnes() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let first = try AmplitudeFake(), second = try AmplitudeFake()
        let instance = try AmplitudeBuild.instance(first, dir: dir)
        #expect(instance.deliver(wireEvent(#"{"type":"page","name":"Home","userId":"user-42"}"#)) == .ok)
        #expect(instance.update(settings: settingsObject(#"{"apiKey":"\#(second.apiKey)","apiHost":"\#(second.baseURL)","trackNamedPages":false,"trackAllPages":true}"#), kind: .refresh) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"page","name":"Home","userId":"user-42"}"#)) == .ok)
        #expect(instance.update(settings: settingsObject(#"{"apiKey":"","apiHost":"http://127.0.0.1:1"}"#), kind: .refresh)
                == .permanent("Amplitude: settings need a non-empty \"apiKey\" string (the project's API key)"))
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Still Here","userId":"user-42"}"#)) == .ok)
        #expect(first.events.map { $0["event_type"]?.stringValue } == ["Viewed Home"])
        #expect(second.events.map { $0["event_type"]?.stringValue } == ["Loaded a Page", "Still Here"])
    }
}
