/// Anything that joins a timeline. Plugins are shared between threads (events arrive from any
/// caller), so they are reference types that must be safe to share.
///
/// The hooks are analytics-swift's, spelled as there (`execute(event:)`, `track(event:)`,
/// `update(settings:type:)`, `configure(analytics:)`, `analytics`), so that a plugin written for
/// analytics-swift is called here unchanged. `execute(_:)` is the same hook on the whole
/// ``Event``: the timeline calls it, and by default it hands the event to `execute(event:)` as its
/// typed struct (`TrackEvent`…), as analytics-swift would.
public protocol Plugin: AnyObject, Sendable {
    var type: PluginType { get }
    /// The client this plugin joined (weak; nil before `configure`). Set by the default
    /// `configure(analytics:)`, as in analytics-swift.
    var analytics: Analytics? { get set }
    /// Called once when the plugin joins a client: the start of its life. Keep the reference weak.
    func configure(analytics: Analytics)
    /// analytics-swift's hook: sees each event as its typed struct (`TrackEvent`, `IdentifyEvent`…)
    /// at this plugin's stage; returning nil drops it for the rest of the timeline.
    func execute<T: RawEvent>(event: T?) -> T?
    /// The same hook on the whole message (what the timeline calls; override it to see every
    /// field without the typed views).
    func execute(_ event: Event) -> Event?
    /// Every settings update reaches every plugin, including those inside destinations.
    func update(settings: Settings, type: UpdateType)
    /// The host is stopping: finish work and release resources.
    func shutdown()
}

extension Plugin {
    public var analytics: Analytics? {
        get { PluginClients.shared.client(of: self) }
        set { PluginClients.shared.set(newValue, for: self) }
    }
    public func configure(analytics: Analytics) { self.analytics = analytics }
    public func execute<T: RawEvent>(event: T?) -> T? { event }
    /// Hands the event to `execute(event:)` as its typed struct (page events as `ScreenEvent`).
    public func execute(_ event: Event) -> Event? {
        switch event.type {
        case .track: return execute(event: TrackEvent(event))?.raw
        case .identify: return execute(event: IdentifyEvent(event))?.raw
        case .screen, .page: return execute(event: ScreenEvent(event))?.raw
        case .group: return execute(event: GroupEvent(event))?.raw
        case .alias: return execute(event: AliasEvent(event))?.raw
        }
    }
    public func update(settings: Settings, type: UpdateType) {}
    public func shutdown() {}
}

/// A plugin with one hook per call type, plus reset and flush (analytics-swift's protocol, same
/// spellings). `page` events reach `screen(event:)`.
public protocol EventPlugin: Plugin {
    func identify(event: IdentifyEvent) -> IdentifyEvent?
    func track(event: TrackEvent) -> TrackEvent?
    func screen(event: ScreenEvent) -> ScreenEvent?
    func group(event: GroupEvent) -> GroupEvent?
    func alias(event: AliasEvent) -> AliasEvent?
    func reset()
    func flush()

    // This project's earlier spellings, still called (the `event:` hooks forward to them by
    // default), so that neither spelling is ever silently ignored.
    func identify(_ event: IdentifyEvent) -> IdentifyEvent?
    func track(_ event: TrackEvent) -> TrackEvent?
    func screen(_ event: ScreenEvent) -> ScreenEvent?
    func group(_ event: GroupEvent) -> GroupEvent?
    func alias(_ event: AliasEvent) -> AliasEvent?
}

extension EventPlugin {
    public func identify(event: IdentifyEvent) -> IdentifyEvent? { identify(event) }
    public func track(event: TrackEvent) -> TrackEvent? { track(event) }
    public func screen(event: ScreenEvent) -> ScreenEvent? { screen(event) }
    public func group(event: GroupEvent) -> GroupEvent? { group(event) }
    public func alias(event: AliasEvent) -> AliasEvent? { alias(event) }
    public func identify(_ event: IdentifyEvent) -> IdentifyEvent? { event }
    public func track(_ event: TrackEvent) -> TrackEvent? { event }
    public func screen(_ event: ScreenEvent) -> ScreenEvent? { event }
    public func group(_ event: GroupEvent) -> GroupEvent? { event }
    public func alias(_ event: AliasEvent) -> AliasEvent? { event }
    public func reset() {}
    public func flush() {}

    /// Routes an event to its typed hook (a whole ``Event`` by its type), as analytics-swift does.
    public func execute<T: RawEvent>(event: T?) -> T? {
        switch event {
        case let e as TrackEvent: return track(event: e) as? T
        case let e as IdentifyEvent: return identify(event: e) as? T
        case let e as ScreenEvent: return screen(event: e) as? T
        case let e as GroupEvent: return group(event: e) as? T
        case let e as AliasEvent: return alias(event: e) as? T
        case let e as Event: return execute(e) as? T
        default: return event
        }
    }
}

/// Where a plugin sits in a timeline. Events pass before → enrichment → destination → after;
/// `utility` plugins receive settings and lifecycle calls but never events.
public enum PluginType: Sendable, CaseIterable, Equatable {
    case before, enrichment, destination, after, utility
}

/// Whether a settings update is the first one a plugin sees or a later refresh.
public enum UpdateType: Sendable, Equatable {
    case initial, refresh
}

/// A weak reference to the client, for plugins (the client owns its plugins, not the reverse).
public struct WeakAnalytics: Sendable {
    public weak var value: Analytics?
    public init(_ value: Analytics? = nil) { self.value = value }
}

/// Where the default ``Plugin/analytics`` lives for plugins that do not store it themselves (a
/// `Sendable` plugin cannot hold a `weak var`): plugin → client, both weak, so it keeps neither
/// alive. An entry whose plugin died is never read again (its identity is checked) and is pruned
/// as entries are added.
final class PluginClients: Sendable {
    static let shared = PluginClients()

    private struct Entry {
        weak var plugin: AnyObject?
        weak var client: Analytics?
    }
    private let entries = Locked<[ObjectIdentifier: Entry]>([:])

    func client(of plugin: AnyObject) -> Analytics? {
        entries.withLock { all in
            guard let entry = all[ObjectIdentifier(plugin)], entry.plugin === plugin else { return nil }
            return entry.client
        }
    }

    func set(_ client: Analytics?, for plugin: AnyObject) {
        entries.withLock { all in
            if all.count >= 64 && all.count.nonzeroBitCount == 1 { all = all.filter { $0.value.plugin != nil } }
            all[ObjectIdentifier(plugin)] = client.map { Entry(plugin: plugin, client: $0) }
        }
    }
}
