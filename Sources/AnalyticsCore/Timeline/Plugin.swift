/// Anything that joins a timeline. Plugins are shared between threads (events arrive from any
/// caller), so they are reference types that must be safe to share.
public protocol Plugin: AnyObject, Sendable {
    var type: PluginType { get }
    /// Called once when the plugin joins a client: the start of its life. Keep the reference weak.
    func configure(analytics: Analytics)
    /// Sees each event at this plugin's stage; returning nil drops it for the rest of the timeline.
    func execute(_ event: Event) -> Event?
    /// Every settings update reaches every plugin, including those inside destinations.
    func update(settings: Settings, type: UpdateType)
    /// The host is stopping: finish work and release resources.
    func shutdown()
}

extension Plugin {
    public func configure(analytics: Analytics) {}
    public func execute(_ event: Event) -> Event? { event }
    public func update(settings: Settings, type: UpdateType) {}
    public func shutdown() {}
}

/// A plugin with one hook per call type, plus reset and flush. `page` events reach `screen`.
public protocol EventPlugin: Plugin {
    func identify(_ event: IdentifyEvent) -> IdentifyEvent?
    func track(_ event: TrackEvent) -> TrackEvent?
    func screen(_ event: ScreenEvent) -> ScreenEvent?
    func group(_ event: GroupEvent) -> GroupEvent?
    func alias(_ event: AliasEvent) -> AliasEvent?
    func reset()
    func flush()
}

extension EventPlugin {
    public func identify(_ event: IdentifyEvent) -> IdentifyEvent? { event }
    public func track(_ event: TrackEvent) -> TrackEvent? { event }
    public func screen(_ event: ScreenEvent) -> ScreenEvent? { event }
    public func group(_ event: GroupEvent) -> GroupEvent? { event }
    public func alias(_ event: AliasEvent) -> AliasEvent? { event }
    public func reset() {}
    public func flush() {}

    /// Routes an event to its typed hook.
    public func execute(_ event: Event) -> Event? {
        switch event.type {
        case .track: return track(TrackEvent(event))?.raw
        case .identify: return identify(IdentifyEvent(event))?.raw
        case .screen, .page: return screen(ScreenEvent(event))?.raw
        case .group: return group(GroupEvent(event))?.raw
        case .alias: return alias(AliasEvent(event))?.raw
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
