import CAnalyticsABI
import Synchronization

/// The timeline plugins one library instance added (`AH_EXT_TIMELINE`): where `add` puts them and
/// what `remove`, and the instance's destruction, take away again.
///
/// A plugin without a destination joins the client's timeline; one with a destination key is
/// handed to the client's scoped plugins, which attach it to that destination's own timeline now
/// or when a destination with that key is created.
package final class NativePluginRegistry: NativeTimelineService {
    package let ownerKey: String
    private let analytics: WeakAnalytics
    private let state = Locked(State())
    private struct State {
        var plugins: [UInt64: NativeTimelinePlugin] = [:]
        var order: [UInt64] = []
        var closed = false
    }
    private static let nextId = Atomic<UInt64>(1)

    package init(ownerKey: String, analytics: Analytics?) {
        self.ownerKey = ownerKey
        self.analytics = WeakAnalytics(analytics)
    }

    /// The plugins in force, in the order they were added.
    package var plugins: [NativeTimelinePlugin] {
        state.withLock { s in s.order.compactMap { s.plugins[$0] } }
    }

    /// Why `add` refused a description, with the status the header gives it.
    package enum AddError: Error, Sendable, Equatable {
        case invalid(String)
        case stopping(String)
    }

    /// Validates a (size-checked, zero-extended) description and puts the plugin in place.
    package func add(_ description: ah_timeline_plugin) throws(AddError) -> UInt64 {
        let type: PluginType
        switch description.type {
        case Int32(AH_PLUGIN_BEFORE): type = .before
        case Int32(AH_PLUGIN_ENRICHMENT): type = .enrichment
        case Int32(AH_PLUGIN_AFTER): type = .after
        case Int32(AH_PLUGIN_UTILITY): type = .utility
        default: throw .invalid("unknown plugin type \(description.type) (expected AH_PLUGIN_BEFORE, _ENRICHMENT, _AFTER or _UTILITY)")
        }
        if type != .utility && description.process == nil {
            throw .invalid("process is NULL for an event stage (only AH_PLUGIN_UTILITY may omit it)")
        }
        let known = UInt32(AH_PLUGIN_THREAD_SAFE) | UInt32(AH_PLUGIN_FAIL_CLOSED)
        if description.flags & ~known != 0 {
            throw .invalid("unknown flags 0x\(String(description.flags & ~known, radix: 16))")
        }
        var name = ownerKey
        if let given = description.name {
            guard let text = String(validatingCString: given), !text.isEmpty else { throw .invalid("name is empty or not valid UTF-8") }
            name = text
        }
        var destination: String?
        if let given = description.destination {
            guard let text = String(validatingCString: given), !text.isEmpty else { throw .invalid("destination is empty or not valid UTF-8") }
            destination = text
        }
        guard let analytics = analytics.value, !analytics.isStopping else {
            throw .stopping("the host is stopping")
        }
        let id = Self.nextId.wrappingAdd(1, ordering: .relaxed).oldValue
        let plugin = NativeTimelinePlugin(description: description, type: type, name: name, destinationKey: destination,
                                          ownerKey: ownerKey, id: id, analytics: WeakAnalytics(analytics))
        let accepted = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.plugins[id] = plugin
            s.order.append(id)
            return true
        }
        guard accepted else { throw .stopping("the instance is being destroyed") }
        if let destination {
            analytics.scopedPlugins.add(plugin, forKey: destination)
        } else {
            analytics.timeline.add(plugin)
        }
        return id
    }

    /// Takes a plugin this instance added off its timeline; `release` follows once no call is in
    /// progress. False for an id this instance does not have (never had, or already removed).
    @discardableResult
    package func remove(id: UInt64) -> Bool {
        let plugin = state.withLock { s -> NativeTimelinePlugin? in
            guard let p = s.plugins.removeValue(forKey: id) else { return nil }
            s.order.removeAll { $0 == id }
            return p
        }
        guard let plugin else { return false }
        detach(plugin)
        return true
    }

    /// Before the instance's `destroy`: removes every plugin it added, refuses new ones, and waits
    /// until each was released (a call in progress on another thread ends first).
    package func removeAll() {
        let plugins = state.withLock { s -> [NativeTimelinePlugin] in
            s.closed = true
            let list = s.order.compactMap { s.plugins[$0] }
            s.plugins = [:]
            s.order = []
            return list
        }
        for plugin in plugins.reversed() { detach(plugin) }
        for plugin in plugins { plugin.waitUntilReleased() }
    }

    /// Reports a problem of this instance's plugins to the client's error handler.
    package func report(_ message: String) { analytics.value?.report(.plugin(name: ownerKey, message: message)) }

    private func detach(_ plugin: NativeTimelinePlugin) {
        plugin.markRemoved()
        guard let analytics = analytics.value else { return }
        if let destination = plugin.destinationKey {
            analytics.scopedPlugins.remove(plugin, forKey: destination)
        } else {
            analytics.timeline.remove(plugin)
        }
    }
}

/// What stands behind `AH_EXT_TIMELINE` for one instance. In the host it is the client's
/// timeline (``NativePluginRegistry``); in `analytics-plugin-runner` it is the runner's table of
/// the library's plugins, whose callbacks the host calls across the process boundary
/// (``RunnerTimeline``). The C table (`HostExtensions`) is the same for both, so a library cannot
/// tell which one it has.
package protocol NativeTimelineService: AnyObject, Sendable {
    /// Validates a (size-checked, zero-extended) description and puts the plugin in place;
    /// returns its id (never 0).
    func add(_ description: ah_timeline_plugin) throws(NativePluginRegistry.AddError) -> UInt64
    /// Takes a plugin this instance added off the timeline; false for an id it does not have.
    @discardableResult
    func remove(id: UInt64) -> Bool
    /// Before the instance's `destroy`: removes every plugin it added, refuses new ones, and
    /// returns once each was released.
    func removeAll()
    /// Reports a problem of this instance's plugins.
    func report(_ message: String)
}
