import Synchronization

/// What happened to the events offered to one destination, for summaries and tests. Counters are
/// atomics: the destination's worker writes them, anyone may read them.
public final class DestinationStats: Sendable {
    /// Events that reached this destination's queue.
    public var received: Int { _received.load(ordering: .relaxed) }
    /// Events handed to the destination after its own timeline.
    public var delivered: Int { _delivered.load(ordering: .relaxed) }
    /// Events its own timeline dropped (filters, destination middleware, plugins returning nil).
    public var dropped: Int { _dropped.load(ordering: .relaxed) }
    /// Events not offered at all because of the `integrations` option or settings (or because the
    /// destination was leaving the timeline).
    public var skipped: Int { _skipped.load(ordering: .relaxed) }
    /// Events dropped because the queue was full (the oldest go first).
    public var overflowed: Int { _overflowed.load(ordering: .relaxed) }
    /// Events the destination failed to deliver for good.
    public var failed: Int { _failed.load(ordering: .relaxed) }
    /// Events the destination still holds for a later attempt (its own queue, retries).
    public var queued: Int { _queued.load(ordering: .relaxed) }
    /// Events never delivered because the destination hung (a call that did not return in time):
    /// the one in flight and those queued behind it, reported with the call.
    public var abandoned: Int { _abandoned.load(ordering: .relaxed) }

    /// Process isolation: events sent to a library's process again after it crashed or hung
    /// while they were in flight (at-least-once: the library may have seen them before).
    public var retried: Int { _retried.load(ordering: .relaxed) }
    /// Process isolation: times the library's process was restarted after a crash or a hang.
    public var restarts: Int { _restarts.load(ordering: .relaxed) }

    let _received = Atomic<Int>(0)
    let _retried = Atomic<Int>(0)
    let _restarts = Atomic<Int>(0)
    let _delivered = Atomic<Int>(0)
    let _dropped = Atomic<Int>(0)
    let _skipped = Atomic<Int>(0)
    let _overflowed = Atomic<Int>(0)
    let _failed = Atomic<Int>(0)
    let _queued = Atomic<Int>(0)
    let _abandoned = Atomic<Int>(0)

    public init() {}

    /// For destinations that learn later that an event could not be delivered.
    public func recordFailure(_ n: Int = 1) { _failed.wrappingAdd(n, ordering: .relaxed) }
    /// For destinations that keep a backlog: how many events wait in it now.
    public func setQueued(_ n: Int) { _queued.store(n, ordering: .relaxed) }
}
