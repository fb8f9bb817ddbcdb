import Foundation

/// Whether calls wait for their work (`flush(completion:)` returns after the completion ran) or
/// hand it to a background queue, as analytics-swift's operating modes do. Events themselves are
/// always handed over before a call returns (Segment.io: on disk).
public enum OperatingMode: Sendable, Equatable {
    /// `flush(completion:)` blocks the caller and runs the completion on its thread: command-line
    /// tools and tests.
    case synchronous
    /// `flush(completion:)` returns at once; the completion runs on a background queue.
    case asynchronous
}

/// Closure plugins (`add(enrichment:)`): take an event, return it (changed or not) or nil to drop
/// it. The optional parameter is analytics-swift's shape (`guard var event else { return nil }`).
public typealias EnrichmentClosure = @Sendable (_ event: Event?) -> Event?

/// An enrichment-stage plugin made from a closure.
public final class ClosureEnrichment: Plugin {
    public let type = PluginType.enrichment
    let closure: EnrichmentClosure
    public init(closure: @escaping EnrichmentClosure) { self.closure = closure }
    public func execute(_ event: Event) -> Event? { closure(event) }
}

/// A plugin that sees settings, reset and flush but never events (analytics-swift's protocol).
public protocol UtilityPlugin: EventPlugin {}

extension UtilityPlugin {
    public var type: PluginType { .utility }
}

/// A plugin that says which version of itself is running (shown by `find(pluginType:)` users,
/// logs and diagnostics).
public protocol VersionedPlugin {
    static func version() -> String
}

extension Analytics {
    // MARK: Switch

    /// Off: calls are ignored (nothing is built, stored or sent) and `flush(completion:)` only
    /// runs the completion. Plugins, settings and the user stay as they are.
    public var enabled: Bool {
        get { compatibility.enabled.load(ordering: .relaxed) }
        set { compatibility.enabled.store(newValue, ordering: .relaxed) }
    }

    /// The configured ``OperatingMode``.
    public var operatingMode: OperatingMode { configuration.operatingMode }

    /// The source's write key.
    public var writeKey: String { configuration.writeKey }

    // MARK: Flush

    /// Flushes every plugin and destination (bounded by `flushTimeout`), then runs `completion`:
    /// before returning in ``OperatingMode/synchronous`` mode, on a background queue in
    /// ``OperatingMode/asynchronous`` mode. When the client is not ``enabled`` only the
    /// completion runs.
    public func flush(completion: (@Sendable () -> Void)?) {
        guard enabled else {
            completion?()
            return
        }
        switch operatingMode {
        case .synchronous:
            flush()
            completion?()
        case .asynchronous:
            DispatchQueue.global().async { [self] in
                flush()
                completion?()
            }
        }
    }

    /// ``flush(completion:)`` that tells the completion what was and was not delivered
    /// (``FlushResult``): events uploaded, still pending (and the last problem), failed for good.
    /// Runs as the other form does in each ``OperatingMode``.
    public func flush(completion: @escaping @Sendable (FlushResult) -> Void) {
        guard enabled else {
            let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination
            completion(FlushResult(uploaded: 0, pending: segment?.pendingEvents ?? 0, failed: 0, queued: [:],
                                   problem: "the client is disabled (enabled = false): nothing was flushed", finishedInTime: true))
            return
        }
        switch operatingMode {
        case .synchronous:
            completion(flushMeasured())
        case .asynchronous:
            DispatchQueue.global().async { [self] in completion(flushMeasured()) }
        }
    }

    // MARK: Plugins

    /// The first plugin of this type in the client's timeline (every stage, destinations included).
    public func find<T: Plugin>(pluginType: T.Type) -> T? {
        allPlugins.lazy.compactMap { $0 as? T }.first
    }

    /// Every plugin of this type in the client's timeline; nil when there is none (as in
    /// analytics-swift).
    public func findAll<T: Plugin>(pluginType: T.Type) -> [T]? {
        let found = allPlugins.compactMap { $0 as? T }
        return found.isEmpty ? nil : found
    }

    /// Adds an enrichment-stage plugin that runs `enrichment` on every event.
    @discardableResult
    public func add(enrichment: @escaping EnrichmentClosure) -> Plugin {
        add(plugin: ClosureEnrichment(closure: enrichment))
    }

    /// Lets a destination that the settings do not name receive events (analytics-swift's
    /// call): its key is added to the settings in force (`integrations[key] = {}`) until the next
    /// settings refresh that leaves it out.
    public func manuallyEnableDestination(plugin: DestinationPlugin) {
        var json = settings.json
        var integrations = json["integrations"]?.objectValue ?? [:]
        guard integrations[plugin.key] == nil else { return }
        integrations[plugin.key] = [:]
        json["integrations"] = .object(integrations)
        update(settings: Settings(json), type: .refresh)
    }

    /// Calls `closure` with every plugin of the client's timeline and of each destination's own
    /// timeline (analytics-swift's call).
    public func apply(closure: (Plugin) -> Void) {
        for plugin in allPlugins {
            closure(plugin)
            (plugin as? DestinationPlugin)?.apply(closure: closure)
        }
    }

    var allPlugins: [Plugin] { PluginType.allCases.flatMap { timeline.plugins(of: $0) } }

    // MARK: Version

    /// ``HostVersion/string``: the one version number of analytics-host.
    public func version() -> String { HostVersion.string }

    /// ``HostVersion/string``.
    public static func version() -> String { HostVersion.string }

    // MARK: Start-up

    /// Returns once the client runs with the settings it starts with: at once when they come
    /// from a file or the defaults, after the first fetch (answered or failed, bounded by the HTTP
    /// timeout) when they come from the CDN. `timeout` (seconds) bounds the wait; returns whether
    /// start-up finished. For command-line tools that must not send before settings are known.
    @discardableResult
    public func waitUntilStarted(timeout: Double? = nil) -> Bool {
        compatibility.waitUntilStarted(timeout: timeout ?? .greatestFiniteMagnitude / 4)
    }

    // MARK: Storage

    /// Whether some events were accepted and not yet delivered: waiting in the Segment.io upload
    /// queue (this run's or earlier runs') or in any destination's queue.
    public var hasUnsentEvents: Bool {
        if let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination, segment.pendingEvents > 0 {
            return true
        }
        return timeline.plugins(of: .destination).contains { (timeline.stats(forKey: ($0 as! DestinationPlugin).key)?.queued ?? 0) > 0 }
    }

    /// Deletes every event waiting in the Segment.io upload queue (they are never sent). The
    /// number deleted is returned and logged: an explicit purge is the only way events leave
    /// the queue undelivered without being counted as failed.
    @discardableResult
    public func purgeStorage() -> Int {
        guard let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination else { return 0 }
        let purged = segment.purge()
        log(.info, "purgeStorage: \(purged) unsent Segment.io event(s) deleted at the application's request")
        return purged
    }
}
