import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Mixpanel from the Swift API: a client whose plugins directory holds the library and whose
/// settings name it; the spec calls reach the fake with the client's ids and context, and the
/// per-call `integrations` option keeps a call away, as for every destination.
@Suite struct MixpanelSwiftAPITests {
    @Test func theClientsCallsReachMixpanelWithItsIdsAndContext() throws {
        let dir = makeTempDirectory("mixpanel-api")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        let plugins = try MixpanelBuild.pluginsDirectory(in: dir)
        var config = Configuration(writeKey: "mixpanel-api", storageDirectory: dir + "/storage")
        config.defaultSettings = Settings(["integrations": ["Mixpanel": .object(settingsObject(MixpanelBuild.settings(fake)))]])
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.application = ApplicationInfo(name: "Shop", version: "3.2.1", build: "321")
        config.pluginsDirectory = plugins
        let analytics = Analytics(configuration: config)
        let anonymousId = analytics.anonymousId
        analytics.track("Browsed", properties: ["big": .number(JSONNumber(text: "12345678901234567890")!), "label": "Zoë 😀"])
        analytics.identify(userId: "user-42", traits: ["email": "zoe@example.com", "plan": "pro"])
        analytics.screen("Basket", properties: ["items": 3])
        analytics.group(groupId: "g-initech", traits: ["name": "Initech"])
        analytics.track("Hidden", integrations: ["Mixpanel": false])
        analytics.alias("user-42-merged")
        #expect(analytics.flush())
        analytics.shutdown()

        #expect(fake.events.map { $0["event"]?.stringValue } == ["Browsed", "$identify", "Viewed Basket", "$merge"])
        let browsed = try #require(fake.events.first?["properties"]?.objectValue)
        #expect(browsed["distinct_id"] == .string(anonymousId) && browsed["$device_id"] == .string(anonymousId) && browsed["$user_id"] == nil)
        #expect(browsed["label"] == "Zoë 😀")
        #expect(browsed["$app_version_string"] == "3.2.1" && browsed["$app_build_number"] == "321")
        #expect(browsed["$insert_id"]?.stringValue?.isEmpty == false)
        #expect(fake.server.requests.contains { $0.bodyText.contains(#""big":12345678901234567890"#) })
        let identify = try #require(fake.events.dropFirst().first?["properties"]?.objectValue)
        #expect(identify["$identified_id"] == "user-42" && identify["$anon_id"] == .string(anonymousId))
        #expect(fake.events[2]["properties"]?["distinct_id"] == "user-42")
        #expect(fake.events[3]["properties"]?["$distinct_ids"] == ["user-42", "user-42-merged"])
        #expect(fake.profileUpdates.first?["$set"] == ["$email": "zoe@example.com", "plan": "pro"])
        #expect(fake.groupUpdates.first?["$group_id"] == "g-initech")
        #expect(fake.uniqueEvents.count == 4)
    }
}
