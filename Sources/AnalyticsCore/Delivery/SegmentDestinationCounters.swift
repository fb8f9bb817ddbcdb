import Synchronization

/// Counts shared by the Segment.io destination (which appends on the caller's thread) and its upload
/// thread (which removes): events waiting on disk, events uploaded or refused by the server, what a
/// previous run left, and the last problem — plus the client's per-destination stats they keep up to
/// date. A separate object so that neither side owns the other.
final class SegmentDestinationCounters: Sendable {
    /// Events on disk not yet acknowledged (exact: the queue counts its records when it opens).
    var pending: Int { _pending.load(ordering: .relaxed) }
    /// Events earlier runs left on disk, found when the queue opened.
    var backlog: Int { _backlog.load(ordering: .relaxed) }
    /// Events the server accepted (2xx) and the queue has forgotten.
    var uploaded: Int { _uploaded.load(ordering: .relaxed) }
    /// Batches the server accepted.
    var uploadedBatches: Int { _batches.load(ordering: .relaxed) }
    /// Events removed for good without delivery: refused by the server (e.g. 400), retry limits.
    var rejected: Int { _rejected.load(ordering: .relaxed) }
    /// The last failed upload, in words ("HTTP 500 from …", "network error: …"), nil if none failed.
    var lastProblem: String? { problem.withLock { $0 } }

    private let _pending = Atomic<Int>(0)
    private let _backlog = Atomic<Int>(0)
    private let _uploaded = Atomic<Int>(0)
    private let _batches = Atomic<Int>(0)
    private let _rejected = Atomic<Int>(0)
    private let problem = Locked<String?>(nil)
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

    /// `n` events left the disk (uploaded, refused, or cut by the cap).
    func removed(_ n: Int) {
        guard n > 0 else { return }
        var current = _pending.load(ordering: .relaxed)
        while true {
            let (exchanged, original) = _pending.compareExchange(expected: current, desired: max(0, current - n), ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        publish()
    }

    /// What a previous run left (the queue's exact count when it opened).
    func setBacklog(_ n: Int) {
        _backlog.store(n, ordering: .relaxed)
        _pending.store(n, ordering: .relaxed)
        publish()
    }

    func uploaded(_ n: Int) {
        _uploaded.wrappingAdd(n, ordering: .relaxed)
        _batches.wrappingAdd(1, ordering: .relaxed)
    }

    /// Events the server refused for good (counted as failed too).
    func rejected(_ n: Int) {
        _rejected.wrappingAdd(n, ordering: .relaxed)
        failed(n)
    }

    func problem(_ text: String) { problem.withLock { $0 = text } }

    /// The events the server refused one by one (a refused batch split down to them), the first
    /// ``refusalsKept`` of them: what the run's summary names.
    var refusals: [(event: String, reason: String)] { refusedEvents.withLock { $0 } }
    static let refusalsKept = 20
    private let refusedEvents = Locked<[(event: String, reason: String)]>([])

    /// One event refused by the server on its own (it is counted by ``rejected(_:)`` as well).
    func refused(messageId: String, reason: String) {
        refusedEvents.withLock { list in
            if list.count < Self.refusalsKept { list.append((messageId, reason)) }
        }
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
