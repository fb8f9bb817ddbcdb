/// A library in process mode that is not a destination (it adds timeline plugins): a utility
/// plugin of the client's timeline, like ``NativeExtension`` in-process, whose instance lives in an
/// `analytics-plugin-runner` child. The child and everything that keeps it going (restart with
/// backoff, the crash limit, the deadline) is the same machinery as a process-isolated
/// destination's; it simply never receives events at the destination stage. Its plugins run
/// through ``IsolatedPlugins``.
public final class ProcessExtension: EventPlugin, ApplicationLifecycle, StopsWithProducers, @unchecked Sendable {
    public let type = PluginType.utility
    public let key: String
    /// The runner machinery (settings, reset, flush, lifecycle, application events and shutdown
    /// go through it).
    let instance: ProcessDestination

    init(instance: ProcessDestination) {
        self.key = instance.key
        self.instance = instance
    }

    /// Whether the library was disabled after crashing too often (and why).
    public var disabledReason: String? { instance.disabledReason }

    public func configure(analytics: Analytics) { instance.configure(analytics: analytics) }
    public func update(settings: Settings, type: UpdateType) { instance.update(settings: settings, type: type) }
    public func reset() { instance.reset() }
    public func flush() { instance.flush() }
    /// An application event, in order with the instance's other calls (as `NativeExtension`).
    public func application(_ event: ApplicationEvent) { instance.application(event) }
    public func shutdown() { instance.shutdown(alwaysFlush: true) }
}
