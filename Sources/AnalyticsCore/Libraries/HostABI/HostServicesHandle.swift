import CAnalyticsABI

/// The part of an `ah_host` that outlives its instance: the C table itself and the context its
/// `ctx` points to. A library may (by mistake) keep the table and call it after `destroy`, from a
/// thread it forgot to stop; those calls must find valid memory, so neither is ever freed. Once
/// the instance is gone the handle is revoked: every call is then a harmless no-op that answers an
/// error (`send_event` AH_ERR_PERMANENT, ids -1, `get_extension` NULL) and the first one is logged
/// as the library bug it is.
///
/// Cost of never freeing: this object and one `ah_host` (well under 200 bytes) per instance ever
/// created, which is bounded by the settings' destination changes of a run.
final class HostServicesHandle: Sendable {
    /// Never deallocated (see above).
    nonisolated(unsafe) let table: UnsafeMutablePointer<ah_host>
    private let state: Locked<State>
    private struct State {
        var live: HostServicesTable?
        /// Kept after revocation to report the first late call.
        var log: (@Sendable (NativeLogLevel, String) -> Void)?
        var reportedLateCall = false
    }

    init(table: UnsafeMutablePointer<ah_host>, live: HostServicesTable) {
        self.table = table
        state = Locked(State(live: live, log: live.services.log))
    }

    /// The context stored in `ah_host.ctx`: this handle, retained for ever.
    func retainedForever() -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(self).toOpaque()
    }

    static func from(_ ctx: UnsafeMutableRawPointer) -> HostServicesHandle {
        Unmanaged<HostServicesHandle>.fromOpaque(ctx).takeUnretainedValue()
    }

    /// The services while the instance lives; nil (and the first such call logged) afterwards.
    func live(_ function: StaticString) -> HostServicesTable? {
        let (live, log) = state.withLock { s -> (HostServicesTable?, (@Sendable (NativeLogLevel, String) -> Void)?) in
            if let live = s.live { return (live, nil) }
            if s.reportedLateCall { return (nil, nil) }
            s.reportedLateCall = true
            return (nil, s.log)
        }
        log?(.error, "called the host (\(function)) after its instance was destroyed or abandoned; ignored (a library bug: stop your threads in destroy)")
        return live
    }

    /// Ends the services: later calls through the table are no-ops. Idempotent.
    func revoke() {
        state.withLock { $0.live = nil }
    }
}
