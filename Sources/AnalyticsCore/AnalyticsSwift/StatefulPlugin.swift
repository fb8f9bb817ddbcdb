import Glibc

// Plugins with state, written as simply as in analytics-swift.
//
// A plugin is shared between threads (events arrive from every caller), so Swift 6 wants it
// `Sendable`, and a class with a `var` is not. Two ways that need neither `@unchecked Sendable`
// nor a lock of your own (both in docs/analytics-swift.md and the tests):
//
// 1. A plain class with plain `var`s that adopts `SerialPlugin` (or `SerialDestinationPlugin`),
//    added with `add(plugin:)` as usual. The client wraps it in `Serialized`, which runs its hooks
//    one at a time under a lock; the instance is *sent* into the wrapper (Swift checks that the
//    caller no longer touches it), and other threads read its state through the wrapper:
//
//        final class Counter: SerialDestinationPlugin {
//            let key = "Counter"
//            var count = 0
//            func track(_ event: TrackEvent) -> TrackEvent? { count += 1; return event }
//        }
//        let counter = analytics.add(plugin: Counter())
//        counter.withPlugin { $0.count }
//
// 2. Keep the `Sendable` protocols and put each piece of state in a `PluginState` box (a `let`):
//    `let count = PluginState(0)` … `count.value += 1`.

/// A plugin written as a plain class (not `Sendable`): its hooks are called one at a time, never
/// concurrently, by the ``Serialized`` wrapper that owns it. Every hook has a default; the
/// spellings are analytics-swift's (`track(event:)`, `execute(event:)`, a `weak var analytics`
/// of your own if you like), and this project's earlier `track(_:)` ones are still called.
public protocol SerialPlugin: AnyObject {
    var type: PluginType { get }
    /// The client (set by the default `configure(analytics:)`).
    var analytics: Analytics? { get set }
    func configure(analytics: Analytics)
    func update(settings: Settings, type: UpdateType)
    /// Sees each event as its typed struct; by default routes it to the typed hook.
    func execute<T: RawEvent>(event: T?) -> T?
    func identify(event: IdentifyEvent) -> IdentifyEvent?
    func track(event: TrackEvent) -> TrackEvent?
    func screen(event: ScreenEvent) -> ScreenEvent?
    func group(event: GroupEvent) -> GroupEvent?
    func alias(event: AliasEvent) -> AliasEvent?
    func identify(_ event: IdentifyEvent) -> IdentifyEvent?
    func track(_ event: TrackEvent) -> TrackEvent?
    func screen(_ event: ScreenEvent) -> ScreenEvent?
    func group(_ event: GroupEvent) -> GroupEvent?
    func alias(_ event: AliasEvent) -> AliasEvent?
    func reset()
    func flush()
    func shutdown()
    /// An application event (see ``ApplicationEvent``).
    func application(_ event: ApplicationEvent)
}

extension SerialPlugin {
    public var analytics: Analytics? {
        get { PluginClients.shared.client(of: self) }
        set { PluginClients.shared.set(newValue, for: self) }
    }
    public func configure(analytics: Analytics) { self.analytics = analytics }
    public func update(settings: Settings, type: UpdateType) {}
    public func execute<T: RawEvent>(event: T?) -> T? {
        switch event {
        case let e as TrackEvent: return track(event: e) as? T
        case let e as IdentifyEvent: return identify(event: e) as? T
        case let e as ScreenEvent: return screen(event: e) as? T
        case let e as GroupEvent: return group(event: e) as? T
        case let e as AliasEvent: return alias(event: e) as? T
        default: return event
        }
    }
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
    public func shutdown() {}
    public func application(_ event: ApplicationEvent) {}
}

/// A ``SerialPlugin`` that is a destination (its key in the settings' `integrations`).
public protocol SerialDestinationPlugin: SerialPlugin {
    var key: String { get }
}

extension SerialDestinationPlugin {
    public var type: PluginType { .destination }
}

/// Owns a ``SerialPlugin`` and makes it a timeline plugin: every hook runs under one (recursive)
/// lock, so the plugin's `var`s need nothing else. `@unchecked Sendable` is this wrapper's
/// promise, kept by that lock and by owning the only reference (the initializer takes the plugin
/// as `sending`).
public final class Serialized<Wrapped: SerialPlugin>: EventPlugin, ApplicationLifecycle, @unchecked Sendable {
    public let type: PluginType
    /// The destination's key (a destination's own timeline, unused for other plugins).
    public let key: String
    public let timeline = Timeline()
    private let lock = RecursiveLock()
    private let plugin: Wrapped

    public init(_ plugin: sending Wrapped) {
        self.type = plugin.type
        self.key = (plugin as? any SerialDestinationPlugin)?.key ?? String(describing: Wrapped.self)
        self.plugin = plugin
    }

    /// Reads or changes the plugin's state from any thread, under the lock its hooks run under.
    public func withPlugin<R: Sendable>(_ body: (Wrapped) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(plugin)
    }

    public func execute(_ event: Event) -> Event? {
        withPlugin { plugin in
            switch event.type {
            case .track: return plugin.execute(event: TrackEvent(event))?.raw
            case .identify: return plugin.execute(event: IdentifyEvent(event))?.raw
            case .screen, .page: return plugin.execute(event: ScreenEvent(event))?.raw
            case .group: return plugin.execute(event: GroupEvent(event))?.raw
            case .alias: return plugin.execute(event: AliasEvent(event))?.raw
            }
        }
    }

    public func execute<T: RawEvent>(event: T?) -> T? { withPlugin { $0.execute(event: event) } }

    /// The wrapper's own client; the wrapped plugin's is set by its `configure(analytics:)`.
    public var analytics: Analytics? {
        get { client.withLock { $0.value } }
        set { client.withLock { $0.value = newValue } }
    }
    private let client = Locked(WeakAnalytics())

    public func configure(analytics: Analytics) {
        self.analytics = analytics
        withPlugin { $0.configure(analytics: analytics) }
    }
    public func update(settings: Settings, type: UpdateType) { withPlugin { $0.update(settings: settings, type: type) } }
    public func reset() { withPlugin { $0.reset() } }
    public func flush() { withPlugin { $0.flush() } }
    public func shutdown() { withPlugin { $0.shutdown() } }
    public func application(_ event: ApplicationEvent) { withPlugin { $0.application(event) } }
}

/// A ``Serialized`` destination is a ``DestinationPlugin`` (its own timeline and worker).
extension Serialized: DestinationPlugin where Wrapped: SerialDestinationPlugin {}

extension Analytics {
    /// Adds a plain-class plugin (analytics-swift's `add(plugin:)` shape); returns the wrapper,
    /// through which other threads reach its state (`withPlugin`).
    @discardableResult
    public func add<P: SerialPlugin>(plugin: sending P) -> Serialized<P> {
        let wrapper = Serialized(plugin)
        add(plugin: wrapper as Plugin)
        return wrapper
    }
}

/// One piece of mutable state in a `let`, for plugins that keep the `Sendable` protocols:
/// `let seen = PluginState(0)`, then `seen.value += 1` is one atomic read-modify-write, and
/// `seen.withLock { … }` groups several steps.
public final class PluginState<Value>: @unchecked Sendable {
    private let lock = RecursiveLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value {
        get { withLock { $0 } }
        _modify {
            lock.lock()
            defer { lock.unlock() }
            yield &stored
        }
    }

    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&stored)
    }
}

/// A recursive pthread mutex (a hook may re-enter its own plugin through the client).
final class RecursiveLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
