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

    /// Runs the event through this destination's timeline and into the destination itself.
    public func process(_ event: Event) -> Event? {
        timeline.deliver(event, to: self).result
    }
}
