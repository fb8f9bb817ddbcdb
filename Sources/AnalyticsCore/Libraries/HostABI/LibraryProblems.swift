/// What loaded libraries reported going wrong while they ran, kept for the end of a run: those
/// whose instance could not be created (settings against their schema, `create`), a
/// library's error-level log lines (a LivePlugins bundle that did not load, a bundle unloaded
/// over its heap bound, a download refused) and its timeline plugins' failed calls. Counted the
/// same whether the library runs in-process or in process mode (both report through the same
/// host services), so `run` can put them in its summary and its exit status.
package final class LibraryProblems: Sendable {
    /// One library's error-level log lines: how many, and the first (as written).
    package struct Logged: Sendable, Equatable {
        public var key: String
        public var count: Int
        public var first: String
    }

    /// One timeline plugin's failed `process` calls.
    package struct PluginFailures: Sendable, Equatable {
        public var plugin: String
        public var owner: String
        public var count: Int
        /// Whether the failed events were dropped (fail-closed) rather than passed on unchanged.
        public var failClosed: Bool
    }

    /// A library whose instance was not created: its settings failed its schema, its `create`
    /// failed, or (process mode) its runner refused it.
    package struct NotCreated: Sendable, Equatable {
        public var key: String
        public var reason: String
    }

    private let state = Locked(State())
    private struct State {
        var logged: [Logged] = []
        var failures: [PluginFailures] = []
        var notCreated: [NotCreated] = []
    }

    package init() {}

    /// A library wrote a log line at error level.
    func logged(key: String, _ text: String) {
        state.withLock { s in
            if let i = s.logged.firstIndex(where: { $0.key == key }) { s.logged[i].count += 1 } else { s.logged.append(Logged(key: key, count: 1, first: text)) }
        }
    }

    /// A timeline plugin's `process` failed (the event went on unchanged, or was dropped).
    func pluginFailed(plugin: String, owner: String, failClosed: Bool) {
        state.withLock { s in
            if let i = s.failures.firstIndex(where: { $0.plugin == plugin && $0.owner == owner }) {
                s.failures[i].count += 1
            } else {
                s.failures.append(PluginFailures(plugin: plugin, owner: owner, count: 1, failClosed: failClosed))
            }
        }
    }

    /// A library's instance could not be created (each key once per reason).
    func notCreated(key: String, _ reason: String) {
        state.withLock { s in
            if !s.notCreated.contains(NotCreated(key: key, reason: reason)) { s.notCreated.append(NotCreated(key: key, reason: reason)) }
        }
    }

    /// Libraries that were not created, in the order reported.
    package var notCreated: [NotCreated] { state.withLock { $0.notCreated } }
    /// Libraries that logged errors, in the order first seen.
    package var logged: [Logged] { state.withLock { $0.logged } }
    /// Plugins that failed, in the order first seen.
    package var pluginFailures: [PluginFailures] { state.withLock { $0.failures } }
    /// Whether anything was reported.
    package var isEmpty: Bool { state.withLock { $0.logged.isEmpty && $0.failures.isEmpty && $0.notCreated.isEmpty } }
}
