/// An integration that must not lose what the host accepted for it (ABI 1.3 `AH_EXT_DURABLE`):
/// typically one that batches events in memory and answers each call only when its upload was
/// acknowledged (the completion hooks, ``TrackLaterHook`` & co).
///
/// Conforming makes the kit offer the `ah_durable` table; a 1.3 host then writes every event
/// accepted for an instance to a queue on disk (it survives SIGKILL) and removes it only when
/// its call answered OK or failed for good. What was handed over and not answered when the
/// process ended is handed over again by the next host on the same storage, so an integration
/// may see an event twice: send its `messageId` as the vendor's de-duplication id.
///
/// A conformance, not a flag, like the hook protocols: `analytics-host plugins` shows it. The
/// operator can still switch it off per destination (`"durable": false` in its settings).
public protocol DurableEvents: Integration {
    /// Disk cap of an instance's queue in bytes (past it the oldest events are dropped, counted
    /// and reported); `nil`, the default: the host's (64 MiB).
    static var durableMaxDiskBytes: UInt64? { get }
}

extension DurableEvents {
    public static var durableMaxDiskBytes: UInt64? { nil }
}
