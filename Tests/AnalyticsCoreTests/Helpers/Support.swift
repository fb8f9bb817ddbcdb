import AnalyticsTestSupport
import Foundation
@testable import AnalyticsCore

/// An in-process destination that records what reaches it.
final class RecordingDestination: DestinationPlugin {
    let key: String
    let timeline = Timeline()
    private let state = Locked(Recorded())
    struct Recorded {
        var events: [Event] = []
        var settings: [(Settings, UpdateType)] = []
        var resets = 0
        var flushes = 0
        var shutdowns = 0
        var configured = 0
    }
    init(_ key: String) { self.key = key }

    var events: [Event] { state.withLock { $0.events } }
    var names: [String] { events.map { $0.event ?? $0.name ?? $0.type.rawValue } }
    var recorded: Recorded { state.withLock { $0 } }

    func configure(analytics: Analytics) { state.withLock { $0.configured += 1 } }
    func execute(_ event: Event) -> Event? {
        state.withLock { $0.events.append(event) }
        return event
    }
    func update(settings: Settings, type: UpdateType) { state.withLock { $0.settings.append((settings, type)) } }
    func reset() { state.withLock { $0.resets += 1 } }
    func flush() { state.withLock { $0.flushes += 1 } }
    func shutdown() { state.withLock { $0.shutdowns += 1 } }
}

/// A plugin of a given type that records names and can drop or tag events.
final class ProbePlugin: EventPlugin {
    let type: PluginType
    let label: String
    let drop: Bool
    private let state = Locked(Seen())
    struct Seen { var names: [String] = []; var updates: [UpdateType] = []; var resets = 0; var flushes = 0 }
    init(_ type: PluginType, _ label: String, drop: Bool = false) {
        self.type = type
        self.label = label
        self.drop = drop
    }
    var seen: Seen { state.withLock { $0 } }
    func execute(_ event: Event) -> Event? {
        state.withLock { $0.names.append(event.event ?? event.type.rawValue) }
        if drop { return nil }
        var e = event
        var trail = e.properties["trail"]?.arrayValue ?? []
        trail.append(.string(label))
        var props = e.properties
        props["trail"] = .array(trail)
        e.properties = props
        return e
    }
    func update(settings: Settings, type: UpdateType) { state.withLock { $0.updates.append(type) } }
    func reset() { state.withLock { $0.resets += 1 } }
    func flush() { state.withLock { $0.flushes += 1 } }
}

/// Settings that enable the given destination keys.
func settings(enabling keys: [String], extra: JSONObject = [:]) -> Settings {
    var integrations: JSONObject = [:]
    for k in keys { integrations[k] = ["apiKey": .string("key-\(k)")] }
    var json: JSONObject = ["integrations": .object(integrations)]
    json.merge(extra)
    return Settings(json)
}

/// A client on a temporary directory with lifecycle events off (tests opt in).
func makeClient(_ keys: [String] = [], configure: (inout Configuration) -> Void = { _ in }) -> (Analytics, ErrorLog) {
    let errors = ErrorLog()
    var config = Configuration(writeKey: "test-key", storageDirectory: makeTempDirectory())
    config.trackApplicationLifecycleEvents = false
    config.defaultSettings = settings(enabling: keys)
    config.settingsLocation = .defaultsOnly
    config.autoAddSegmentDestination = false  // tests that want it point it at a loopback server
    config.errorHandler = errors.handler
    configure(&config)
    return (Analytics(configuration: config), errors)
}

extension Event {
    var trail: [String] { properties["trail"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
}
