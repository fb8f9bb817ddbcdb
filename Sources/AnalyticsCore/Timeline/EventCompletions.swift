import Foundation

/// The tickets of a durable destination's events: each event its worker hands over from the
/// queue on disk carries one, and the event is crossed off the queue once its ticket is finished.
///
/// Why tickets: an event is finished when the destination has its final answer, which may come
/// long after `execute` returned (a library that finishes later, a batch hook, a runner process).
/// The worker sets the ticket of the event it is about to hand over (`handing`); a destination
/// that may answer later takes it inside `execute` (`take`) and calls `finish` once the answer is
/// final (OK, or failed for good). A ticket nobody took is finished by the worker when the call
/// returns (the destination answered at once, or the event's own timeline dropped it).
final class EventCompletions: @unchecked Sendable {
    /// The ticket of the event being handed over: set and read on the worker thread only (the
    /// destination's `execute` runs there).
    private var current: UInt64?
    private let finished = Locked<[UInt64]>([])
    private let wake = CallbackSlot()

    /// `body` runs (on the finishing thread) whenever tickets are finished.
    func wakes(_ body: @escaping @Sendable () -> Void) { wake.set(body) }

    /// The worker is about to hand over the event of `ticket`.
    func handing(_ ticket: UInt64) { current = ticket }

    /// The ticket of the event in `execute`, taken: the caller now owes its `finish`. nil when
    /// the event does not come from a durable queue (or was taken already).
    func take() -> UInt64? {
        defer { current = nil }
        return current
    }

    /// After the call: the ticket if the destination did not take it.
    func untaken() -> UInt64? { take() }

    /// The event of `ticket` has its final answer. Any thread; never blocks on the worker.
    func finish(_ ticket: UInt64) {
        finished.withLock { $0.append(ticket) }
        wake()
    }

    /// Several at once (a batch the vendor acknowledged).
    func finish<S: Sequence>(_ tickets: S) where S.Element == UInt64 {
        var any = false
        finished.withLock { list in
            for t in tickets { list.append(t); any = true }
        }
        if any { wake() }
    }

    /// What finished since the last call (worker thread).
    func drain() -> [UInt64] {
        finished.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }
}

/// A destination that may answer for an event after `execute` returned: it takes the event's
/// ticket there and finishes it when the answer is final. The worker of a durable destination
/// hands it the completions before the first event.
protocol FinishesEventsLater: DestinationPlugin {
    func finishEvents(through completions: EventCompletions)
}
