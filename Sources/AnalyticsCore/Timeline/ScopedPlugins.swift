/// Plugins meant for one destination's own timeline, by destination key, whether or not a
/// destination with that key exists yet: each is attached to the destination's timeline when it is
/// added (or when the destination is created later, after its middleware and filters), and to
/// the next destination with that key if the settings remove and re-create it.
///
/// Used by libraries' destination-scoped plugins (ABI 1.2, `AH_EXT_TIMELINE`); the same plugins
/// in the same timelines as everything else.
final class ScopedPlugins: Sendable {
    private let state = Locked(State())
    private struct State {
        var plugins: [String: [Plugin]] = [:]
        var timelines: [String: Timeline] = [:]
    }

    /// Adds a plugin for `key`'s destination: attached now if it exists, else when it is created.
    func add(_ plugin: Plugin, forKey key: String) {
        let timeline = state.withLock { s -> Timeline? in
            s.plugins[key, default: []].append(plugin)
            return s.timelines[key]
        }
        timeline?.add(plugin, unlessPresent: true)
    }

    func remove(_ plugin: Plugin, forKey key: String) {
        let timeline = state.withLock { s -> Timeline? in
            s.plugins[key]?.removeAll { $0 === plugin }
            if s.plugins[key]?.isEmpty == true { s.plugins[key] = nil }
            return s.timelines[key]
        }
        timeline?.remove(plugin)
    }

    /// A destination with `key` is joining (before it receives its first event): its timeline gets
    /// every plugin scoped to that key, in the order they were added.
    func destinationAdded(key: String, timeline: Timeline) {
        let plugins = state.withLock { s -> [Plugin] in
            s.timelines[key] = timeline
            return s.plugins[key] ?? []
        }
        for plugin in plugins { timeline.add(plugin, unlessPresent: true) }
    }

    func destinationRemoved(key: String, timeline: Timeline) {
        state.withLock { s in if s.timelines[key] === timeline { s.timelines[key] = nil } }
    }

    /// The plugins waiting for or attached to `key`'s destination.
    func plugins(forKey key: String) -> [Plugin] { state.withLock { $0.plugins[key] ?? [] } }
}
