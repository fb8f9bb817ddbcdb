/// A destination: receives events at the destination stage and has its own timeline of before /
/// enrichment / after plugins that apply to it alone (filters, destination middleware, …).
///
/// The host gives every destination its own worker: hooks are never called concurrently, arrive
/// in call order, and a slow destination delays nobody else.
public protocol DestinationPlugin: EventPlugin {
    /// The destination's key in the settings' `integrations` map ("Amplitude", "Segment.io").
    var key: String { get }
    /// Plugins that run for this destination only.
    var timeline: Timeline { get }
}

extension DestinationPlugin {
    public var type: PluginType { .destination }

    /// Adds a plugin to this destination's own timeline.
    @discardableResult
    public func add(plugin: Plugin) -> Plugin {
        timeline.add(plugin)
        return plugin
    }

    public func remove(plugin: Plugin) { timeline.remove(plugin) }

    /// Adds an enrichment closure to this destination's own timeline.
    @discardableResult
    public func add(enrichment: @escaping EnrichmentClosure) -> Plugin {
        add(plugin: ClosureEnrichment(closure: enrichment))
    }

    /// The first plugin of this type in this destination's own timeline.
    public func find<T: Plugin>(pluginType: T.Type) -> T? {
        PluginType.allCases.lazy.flatMap { self.timeline.plugins(of: $0) }.compactMap { $0 as? T }.first
    }

    /// Every plugin of this type in this destination's own timeline; nil when there is none.
    public func findAll<T: Plugin>(pluginType: T.Type) -> [T]? {
        let found = PluginType.allCases.flatMap { timeline.plugins(of: $0) }.compactMap { $0 as? T }
        return found.isEmpty ? nil : found
    }

    /// Calls `closure` with every plugin of this destination's own timeline (analytics-swift's call).
    public func apply(closure: (Plugin) -> Void) {
        for type in PluginType.allCases { timeline.plugins(of: type).forEach(closure) }
    }

    /// Runs the event through this destination's timeline and into the destination itself.
    public func process(_ event: Event) -> Event? {
        timeline.deliver(event, to: self).result
    }
}

/// A destination whose work on an event is quick and must be finished when the call returns (the
/// Segment.io destination writes each event to its durable queue: "accepted" means on disk). It
/// runs on the caller's thread inside the fan-out instead of on a worker: no queue, no overflow.
/// `execute`, `update` and `reset` are never called concurrently and keep call order; `flush` and
/// `shutdown` may run on another thread while an event is being handled, so they must be safe to.
package protocol InlineDestination: DestinationPlugin {}
