import Synchronization

/// Counts shared by the Segment.io destination (which appends on its worker thread) and its upload
/// thread (which removes): events waiting on disk, events uploaded, and the client's per-destination
/// stats they keep up to date. A separate object so that neither side owns the other.
final class SegmentDestinationCounters: Sendable {
    /// Events on disk not yet acknowledged. Exact for this run's events; events a previous run left
    /// are counted from the first batch read at start (the queue keeps no count), so the figure is a
    /// lower bound until the backlog has been drained once.
    var pending: Int { _pending.load(ordering: .relaxed) }
    /// Events the server accepted (2xx) and the queue has forgotten.
    var uploaded: Int { _uploaded.load(ordering: .relaxed) }
    /// Batches the server accepted.
    var uploadedBatches: Int { _batches.load(ordering: .relaxed) }

    private let _pending = Atomic<Int>(0)
    private let _uploaded = Atomic<Int>(0)
    private let _batches = Atomic<Int>(0)
    private let stats = Locked<DestinationStats?>(nil)

    func attach(_ stats: DestinationStats?) {
        self.stats.withLock { $0 = stats }
        publish()
    }

    /// One more event on disk; returns the new pending count.
    @discardableResult
    func appended() -> Int {
        let n = _pending.wrappingAdd(1, ordering: .relaxed).newValue
        stats.withLock { $0 }?.setQueued(n)
        return n
    }

    /// `n` events left the disk (uploaded, dropped or cut by the cap).
    func removed(_ n: Int) {
        var current = _pending.load(ordering: .relaxed)
        while true {
            let (exchanged, original) = _pending.compareExchange(expected: current, desired: max(0, current - n), ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        publish()
    }

    /// The queue was seen empty: the count is zero unless events arrived since `observed` was read.
    func drained(observed: Int) {
        _ = _pending.compareExchange(expected: observed, desired: 0, ordering: .relaxed)
        publish()
    }

    /// Sets the count of events a previous run left (see ``pending``).
    func setBacklog(_ n: Int) {
        _pending.store(n, ordering: .relaxed)
        publish()
    }

    func uploaded(_ n: Int) {
        _uploaded.wrappingAdd(n, ordering: .relaxed)
        _batches.wrappingAdd(1, ordering: .relaxed)
    }

    /// Events that will never be delivered (rejected, dropped batch, over the disk cap, refused).
    func failed(_ n: Int) {
        guard n > 0 else { return }
        stats.withLock { $0 }?.recordFailure(n)
    }

    private func publish() {
        stats.withLock { $0 }?.setQueued(_pending.load(ordering: .relaxed))
    }
}
