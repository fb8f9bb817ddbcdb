// Plugins written the way analytics-swift's documentation writes them — `track(event:)`,
// `execute(event:)`, `update(settings:type:)`, `configure(analytics:)`, the `analytics` property —
// added to a real client: each hook must be called (a hook that compiles and is never called is
// the failure this suite exists for). The verbatim analytics-swift classes (non-final, `weak var
// analytics`, plain `var`s) are compiled in Swift 5 mode against the built module and run in
// AnalyticsSwiftSourceTests.
import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// An enrichment plugin with analytics-swift's typed hooks.
final class SwiftStyleTagger: EventPlugin {
    let type = PluginType.enrichment

    func track(event: TrackEvent) -> TrackEvent? {
        var e = event
        e.properties["tagged"] = "track"
        return e
    }
    func identify(event: IdentifyEvent) -> IdentifyEvent? {
        var e = event
        e.traits["tagged"] = "identify"
        return e
    }
    func screen(event: ScreenEvent) -> ScreenEvent? {
        var e = event
        e.properties["tagged"] = "screen"
        return e
    }
    func group(event: GroupEvent) -> GroupEvent? {
        var e = event
        e.traits["tagged"] = "group"
        return e
    }
    func alias(event: AliasEvent) -> AliasEvent? {
        var e = event
        e.context["tagged"] = "alias"
        return e
    }
}

/// A `before` plugin with analytics-swift's generic hook: stamps every event, drops debug tracks.
final class SwiftStyleStamper: Plugin {
    let type = PluginType.before

    func execute<T: RawEvent>(event: T?) -> T? {
        guard var event else { return nil }
        if let track = event as? TrackEvent, track.event.hasPrefix("Debug") { return nil }
        event.context["stamped"] = .bool(true)
        return event
    }
}

/// A plugin that keeps the client, as analytics-swift's `configure(analytics:)` overrides do.
final class SwiftStyleConfigured: Plugin {
    let type = PluginType.utility
    let configuredWith = PluginState<String?>(nil)

    func configure(analytics: Analytics) {
        self.analytics = analytics
        configuredWith.value = analytics.writeKey
    }
}

/// A destination with analytics-swift's hooks, recording what it is given.
final class SwiftStyleDestination: DestinationPlugin {
    let key = "SwiftStyle"
    let timeline = Timeline()
    let seen = PluginState<[String]>([])
    let updates = PluginState<[UpdateType]>([])
    let flushes = PluginState(0)

    func update(settings: Settings, type: UpdateType) {
        updates.value.append(type)
    }
    func track(event: TrackEvent) -> TrackEvent? {
        seen.value.append("track \(event.event) tagged=\(event.properties["tagged"]?.stringValue ?? "-") stamped=\(event.context["stamped"] == .bool(true))")
        return event
    }
    func identify(event: IdentifyEvent) -> IdentifyEvent? {
        seen.value.append("identify \(event.userId ?? "-") tagged=\(event.traits["tagged"]?.stringValue ?? "-")")
        return event
    }
    func screen(event: ScreenEvent) -> ScreenEvent? {
        seen.value.append("screen \(event.name ?? "-") tagged=\(event.properties["tagged"]?.stringValue ?? "-")")
        return event
    }
    func group(event: GroupEvent) -> GroupEvent? {
        seen.value.append("group \(event.groupId) tagged=\(event.traits["tagged"]?.stringValue ?? "-")")
        return event
    }
    func alias(event: AliasEvent) -> AliasEvent? {
        seen.value.append("alias \(event.userId ?? "-") tagged=\(event.context["tagged"]?.stringValue ?? "-")")
        return event
    }
    func flush() { flushes.value += 1 }
}

/// A plain class (no `Sendable`) with analytics-swift's spellings, its own `weak var analytics`
/// and `var`s: the shape of most analytics-swift plugins.
final class SwiftStyleCounter: SerialDestinationPlugin {
    let key = "SwiftStyleCounter"
    weak var analytics: Analytics? = nil
    var tracks: [String] = []
    var identifies = 0

    func track(event: TrackEvent) -> TrackEvent? {
        tracks.append(event.event)
        return event
    }
    func identify(event: IdentifyEvent) -> IdentifyEvent? {
        identifies += 1
        return event
    }
}

/// This project's earlier spelling: still called (forwarded), never silently ignored.
final class EarlierSpelling: EventPlugin {
    let type = PluginType.enrichment
    let tracks = PluginState(0)
    func track(_ event: TrackEvent) -> TrackEvent? {
        tracks.value += 1
        return event
    }
}

@Suite struct AnalyticsSwiftPluginTests {
    func client(_ keys: [String]) -> Analytics {
        var integrations: JSONObject = [:]
        for key in keys { integrations[key] = [:] }
        return Analytics(configuration: Configuration(writeKey: "swift-style")
            .trackApplicationLifecycleEvents(false)
            .operatingMode(.synchronous)
            .storageMode(.memory(100))
            .autoAddSegmentDestination(false)
            .settingsLocation(.defaultsOnly)
            .defaultSettings(Settings(["integrations": .object(integrations)])))
    }

    @Test func everyAnalyticsSwiftHookIsCalled() throws {
        let analytics = client(["SwiftStyle"])
        let tagger = SwiftStyleTagger()
        let stamper = SwiftStyleStamper()
        let destination = SwiftStyleDestination()
        analytics.add(plugin: tagger)
        analytics.add(plugin: stamper)
        analytics.add(plugin: destination)

        analytics.track(name: "Debug ping")
        analytics.track(name: "Signed Up", properties: ["plan": "pro"])
        analytics.identify(userId: "u-1", traits: ["name": "Ada"])
        analytics.screen(title: "Home")
        analytics.group(groupId: "acme")
        analytics.alias(newId: "u-2")
        analytics.flush()

        #expect(destination.seen.value == [
            "track Signed Up tagged=track stamped=true",
            "identify u-1 tagged=identify",
            "screen Home tagged=screen",
            "group acme tagged=group",
            "alias u-2 tagged=alias",
        ])
        #expect(destination.updates.value == [.initial], "update(settings:type:) reached the destination")
        #expect(destination.flushes.value >= 1)
        // The `analytics` property, set by the default configure(analytics:) as in analytics-swift.
        #expect(tagger.analytics === analytics && stamper.analytics === analytics && destination.analytics === analytics)
        #expect(analytics.shutdown())
    }

    @Test func configureOverridesAndTheAnalyticsPropertyWork() throws {
        let analytics = client([])
        let plugin = SwiftStyleConfigured()
        #expect(plugin.analytics == nil)
        analytics.add(plugin: plugin)
        #expect(plugin.configuredWith.value == "swift-style")
        #expect(plugin.analytics === analytics)
        analytics.remove(plugin: plugin)
        var count = 0
        analytics.apply { _ in count += 1 }
        #expect(count > 0, "apply(closure:) visits the client's plugins")
        #expect(analytics.shutdown())
    }

    @Test func aPlainClassWithWeakAnalyticsAndVarsRunsThroughSerialized() throws {
        let analytics = client(["SwiftStyleCounter"])
        let counter = analytics.add(plugin: SwiftStyleCounter())
        analytics.track(name: "A")
        analytics.identify(userId: "u-1")
        analytics.track(name: "B")
        analytics.flush()
        #expect(counter.withPlugin { $0.tracks } == ["A", "B"])
        #expect(counter.withPlugin { $0.identifies } == 1)
        #expect(counter.withPlugin { $0.analytics === analytics }, "its own weak var was set by configure(analytics:)")
        #expect(analytics.shutdown())
    }

    @Test func theEarlierSpellingIsStillCalled() throws {
        let analytics = client([])
        let plugin = EarlierSpelling()
        analytics.add(plugin: plugin)
        analytics.track(name: "A")
        analytics.track(name: "B")
        #expect(plugin.tracks.value == 2)
        #expect(analytics.shutdown())
    }

    @Test func executeEventOnTypedStructsRoutesToTheTypedHook() throws {
        let tagger = SwiftStyleTagger()
        let raw = try Event(payload: ["type": "track", "event": "X", "messageId": "m-1"])
        let typed = tagger.execute(event: TrackEvent(raw))
        #expect(typed?.properties["tagged"] == "track")
        let whole = tagger.execute(event: raw)
        #expect(whole?.properties["tagged"] == "track", "a whole Event goes to the hook of its type")
        #expect(tagger.execute(event: Optional<TrackEvent>.none) == nil)
    }

    @Test func integrationSwitchesOnEventsWorkAsInAnalyticsSwift() throws {
        var event = TrackEvent(try Event(payload: ["type": "track", "event": "X", "integrations": ["Mixpanel": ["token": "t"], "Amplitude": true]]))
        event.disableCloudIntegrations(exceptKeys: ["Mixpanel", "Braze"])
        #expect(event.integrations == ["All": false, "Mixpanel": ["token": "t"], "Braze": true])
        event.enableIntegration(key: "Mixpanel")
        #expect(event.integrations["Mixpanel"] == ["token": "t"], "a settings object already enables it")
        event.disableIntegration(key: "Braze")
        #expect(event.integrations["Braze"] == false)
        event.enableCloudIntegrations(exceptKeys: ["Amplitude"])
        #expect(event.integrations == ["All": true, "Amplitude": false])
        #expect(event.raw.integrations == event.integrations, "changes land in the message")
    }

    @Test func settingsDecodeIntoAPluginsOwnStruct() throws {
        struct AmplitudeSettings: Decodable, Equatable { let apiKey: String; let trackAllPages: Bool? }
        let settings = try Settings(parsing: #"{"integrations":{"SwiftStyle":{"apiKey":"k-1","trackAllPages":true},"Bad":{"apiKey":3}}}"#)
        let destination = SwiftStyleDestination()
        let decoded: AmplitudeSettings? = settings.integrationSettings(forPlugin: destination)
        #expect(decoded == AmplitudeSettings(apiKey: "k-1", trackAllPages: true))
        let wrong: AmplitudeSettings? = settings.integrationSettings(forKey: "Bad")
        #expect(wrong == nil, "settings that do not decode give nil, as in analytics-swift")
        #expect(settings.hasIntegrationSettings(forPlugin: destination) && settings.hasIntegrationSettings(key: "Bad"))
        #expect(!settings.hasIntegrationSettings(key: "Absent"))
        let untyped = settings.integrationSettings(forKey: "SwiftStyle")
        #expect(untyped?["apiKey"] == "k-1", "without a type annotation, the JSON object as before")
    }
}
