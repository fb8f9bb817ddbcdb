@_exported import AnalyticsCore

/// A device-mode destination written in Swift, built as its own shared library.
///
/// Write ONE final class conforming to this protocol and to the hook protocols of the calls it
/// handles (``TrackHook``, ``FlushHook``… in IntegrationHooks.swift), and ONE export line (see
/// ``IntegrationExport``);
/// this module does the C side: the static `ah_integration`/`ah_hooks` tables, the toolchain
/// declaration, decoding event JSON into typed views, and turning thrown errors into statuses.
///
/// Threads: the host calls one instance's methods one at a time, in order, on the destination's
/// own worker thread (consecutive calls may come from different threads), so an instance needs no
/// locking for its own state and may block (network, disk) inside a hook. Different instances may
/// run concurrently. `deinit` is the ABI's `destroy`: stop any thread or timer you started there.
///
/// Errors: throw ``IntegrationError/retryable(_:)`` for failures worth retrying (the host backs off
/// and calls again with the same input) and ``IntegrationError/permanent(_:)`` for the rest; any
/// other error counts as permanent. Its text reaches the host's report.
public protocol Integration: AnyObject {
    /// The stable key settings and the `integrations` option use, e.g. `"Webhooks"`.
    static var key: String { get }
    /// This integration's own version, e.g. `"1.0.0"`.
    static var version: String { get }

    /// Creates an instance from its settings (the object under `integrations[key]`, `{}` when
    /// none). Throwing refuses the instance; the message names the bad setting.
    init(settings: JSONObject, host: IntegrationHost) throws
}
