import Foundation

/// An instance of a library that is not a destination (`AH_EXT_ROLE` without
/// `AH_ROLE_DESTINATION`): a utility plugin of the client's timeline, so it hears every settings
/// update (the whole document), reset, flush and the shutdown like any plugin, and forwards them
/// to its instance on a thread dedicated to it. Its events work happens in the timeline plugins
/// it adds (`AH_EXT_TIMELINE`).
///
/// Order at the end: `lifecycle(stopping)`, `flush`, its timeline plugins removed and released,
/// then `destroy`.
package final class NativeUtilityLibrary: EventPlugin, ApplicationLifecycle, StopsWithProducers, @unchecked Sendable {
    package let type = PluginType.utility
    package let key: String
    package let integration: NativeIntegration
    private let thread: InstanceThread
    private let client = Locked(WeakAnalytics())
    /// Touched on the instance's thread only.
    private var started = false
    /// Longest wait for a flush or the shutdown to finish on the instance's thread.
    private let timeout: Double

    package init(integration: NativeIntegration, timeout: Double = 10) {
        self.key = integration.key
        self.integration = integration
        self.timeout = timeout
        self.thread = InstanceThread(name: "plugin \(integration.key)")
    }

    /// Without a `shutdown` (the client was dropped), the thread still ends; the instance is
    /// destroyed by `NativeIntegration`'s deinit.
    deinit { thread.stop(timeout: 0) {} }

    /// The timeline plugins the instance added, in order.
    package var plugins: [NativeTimelinePlugin] { integration.timelinePlugins }

    package func configure(analytics: Analytics) {
        client.withLock { $0 = WeakAnalytics(analytics) }
        thread.submit { [self] in startIfNeeded() }
    }

    package func update(settings: Settings, type: UpdateType) {
        thread.submit { [self] in
            startIfNeeded()
            report("update", integration.update(settings: settings.json, kind: type == .initial ? .initial : .refresh))
        }
    }

    package func reset() {
        thread.submit { [self] in
            startIfNeeded()
            report("reset", integration.reset())
        }
    }

    /// Waits (bounded) so that a flush of the client covers this instance too.
    package func flush() {
        thread.perform(timeout: timeout) { [self] in
            startIfNeeded()
            report("flush", integration.flush())
        }
    }

    /// An application event, on the instance's thread after what was asked before it.
    package func application(_ event: ApplicationEvent) {
        thread.submit { [self] in
            startIfNeeded()
            report("application_event(\(event.name))", integration.application(event))
        }
    }

    package func shutdown() {
        let stopped = thread.stop(timeout: timeout) { [self] in
            if started { report("lifecycle(stopping)", integration.lifecycle(.stopping)) }
            report("flush", integration.flush())
            integration.destroy()
        }
        if !stopped { client.withLock { $0.value }?.report(.plugin(name: key, message: "did not stop within \(timeout) s")) }
    }

    private func startIfNeeded() {
        guard !started else { return }
        started = true
        report("lifecycle(started)", integration.lifecycle(.started))
    }

    private func report(_ what: String, _ result: NativeHookResult) {
        let message: String
        switch result {
        case .ok: return
        case .retryable(let text): message = "\(what) failed (retryable, not retried): \(text)"
        case .permanent(let text): message = "\(what) failed: \(text)"
        }
        client.withLock { $0.value }?.report(.plugin(name: key, message: message))
    }
}
