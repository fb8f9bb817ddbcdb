import CAnalyticsABI

/// What stands behind `AH_EXT_TIMELINE` for one instance. In the host it is the client's
/// timeline (``NativePluginRegistry``); in `analytics-plugin-runner` it is the runner's table of
/// the library's plugins, whose callbacks the host calls across the process boundary
/// (``RunnerTimeline``). The C table (`HostExtensions`) is the same for both, so a library cannot
/// tell which one it has.
public protocol NativeTimelineService: AnyObject, Sendable {
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
