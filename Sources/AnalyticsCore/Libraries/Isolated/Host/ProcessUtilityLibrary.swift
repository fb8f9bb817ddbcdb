/// A library in process mode that is not a destination (it adds timeline plugins): a utility
/// plugin of the client's timeline, like ``NativeUtilityLibrary`` in-process, whose instance lives in an
/// `analytics-plugin-runner` child. The child and everything that keeps it going (restart with
/// backoff, the crash limit, the deadline) is the same machinery as a process-isolated
/// destination's; it simply never receives events at the destination stage. Its plugins run
/// through ``IsolatedPlugins``.
package final class ProcessUtilityLibrary: EventPlugin, ApplicationLifecycle, StopsWithProducers, @unchecked Sendable {
    package let type = PluginType.utility
    package let key: String
    /// The runner machinery (settings, reset, flush, lifecycle, application events and shutdown
    /// go through it).
    let instance: ProcessDestination

    init(instance: ProcessDestination) {
        self.key = instance.key
        self.instance = instance
    }

    /// Whether the library was disabled after crashing too often (and why).
    package var disabledReason: String? { instance.disabledReason }

    package func configure(analytics: Analytics) { instance.configure(analytics: analytics) }
    package func update(settings: Settings, type: UpdateType) { instance.update(settings: settings, type: type) }
    package func reset() { instance.reset() }
    package func flush() { instance.flush() }
    /// An application event, in order with the instance's other calls (as `NativeUtilityLibrary`).
    package func application(_ event: ApplicationEvent) { instance.application(event) }
    package func shutdown() { instance.shutdown(alwaysFlush: true) }
}
