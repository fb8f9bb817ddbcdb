import Foundation

/// Middleware that answers later: tickets keep the order in which events entered the chain, and
/// the rest of the timeline sees them in that order once each is answered (or dropped at its
/// deadline).
///
/// Threads: the caller never waits for a deferred answer (reset and flush excepted: they wait,
/// within the deadline, as they wait for destinations). Answers continue on this chain's queue,
/// never on the thread that called `next`, which may be inside the pipeline (a destination's
/// worker, a library's callback): running the pipeline there could wait on what that thread
/// holds. Source events are then released from the queue through the client's fan-out;
/// destination events on the destination's worker (a `release` item), which keeps the rule
/// that a destination is called from one thread at a time, in order.
extension MiddlewarePlugin {
    struct Order {
        var next: UInt64 = 1
        /// The oldest ticket not yet released.
        var head: UInt64 = 1
        var slots: [UInt64: Slot] = [:]
        /// Tickets whose answer has not come.
        var waiting = 0
        /// Destination events let through after their middleware returned without `later()`,
        /// for the destination's worker (no ticket: analytics-ios keeps no order for them).
        var unordered: [Event] = []
    }

    enum Slot {
        case waiting
        /// Answered: the event to hand on, or nil when it was dropped.
        case done(Event?)
    }

    /// A middleware said `later()`: the event takes the next ticket and waits for its answer.
    func park(_ step: MiddlewareStep) {
        let ticket = order.withLock { o -> UInt64 in
            let t = o.next
            o.next += 1
            o.slots[t] = .waiting
            o.waiting += 1
            backlog.add(1, ordering: .releasing)
            return t
        }
        awaitAnswer(step, ticket: ticket)
    }

    /// An event answered at once while earlier ones still wait: it goes behind them.
    func enqueueAnswered(_ event: Event?) {
        order.withLock { o in
            o.slots[o.next] = .done(event)
            o.next += 1
            backlog.add(1, ordering: .releasing)
        }
        // A source chain's queue may have released everything before this ticket meanwhile and
        // stopped; a destination's events arrive on the thread that releases them.
        if destinationKey == nil { queue.async { [self] in releaseSource() } }
    }

    /// Waits for `step`'s answer under `ticket`, with its deadline.
    private func awaitAnswer(_ step: MiddlewareStep, ticket: UInt64) {
        if let early = step.startWaiting(ticket: ticket) {
            queue.async { [self] in continueAfter(step, early) }
            return
        }
        let seconds = timeout
        queue.asyncAfter(deadline: .now() + seconds) { [self] in
            guard step.expire() else { return }
            reportExpired(step)
            fill(ticket, with: nil)
        }
    }

    /// `next` was called later (any thread): the chain goes on, on this chain's queue.
    func answeredLater(_ step: MiddlewareStep, _ answer: MiddlewareStep.Answer) {
        queue.async { [self] in continueAfter(step, answer) }
    }

    /// On the queue: the rest of the chain after `step`, then the event's slot is filled.
    private func continueAfter(_ step: MiddlewareStep, _ answer: MiddlewareStep.Answer) {
        guard case .pass(let context) = answer else { return fill(step.ticket, with: nil) }
        switch run(context, from: step.index + 1) {
        case .passed(let out): fill(step.ticket, with: Self.payload(of: out))
        case .dropped: fill(step.ticket, with: nil)
        case .deferred(let next): awaitAnswer(next, ticket: step.ticket)
        }
    }

    /// `next` was called after the middleware returned without `later()` (analytics-ios code): the
    /// event goes on, on this chain's queue, without waiting for earlier events and without a
    /// deadline, and is counted. A later middleware that says `later()` puts it back in order.
    func answeredUnordered(_ step: MiddlewareStep, _ answer: MiddlewareStep.Answer) {
        guard case .pass(let context) = answer else { return }
        unorderedCount.add(1, ordering: .relaxed)
        queue.async { [self] in
            switch run(context, from: step.index + 1) {
            case .passed(let out):
                guard let event = Self.payload(of: out) else { return }
                if destinationKey == nil {
                    analytics?.timeline.processResumed(event, after: self)
                    return
                }
                order.withLock { $0.unordered.append(event) }
                if destinationWorker?.submit(.release(self)) != true {
                    let lost = order.withLock { o -> Int in
                        defer { o.unordered.removeAll() }
                        return o.unordered.count
                    }
                    if lost > 0 {
                        report("\(name(of: step)) let \(step.what) through after its destination stopped; not delivered")
                    }
                }
            case .dropped:
                return
            case .deferred(let next):
                park(next)
            }
        }
    }

    /// On the queue: `ticket` is answered; what is ready at the head goes on.
    private func fill(_ ticket: UInt64, with event: Event?) {
        order.withLock { o in
            o.slots[ticket] = .done(event)
            o.waiting -= 1
        }
        settled.lock()
        settled.broadcast()
        settled.unlock()
        if destinationKey == nil {
            releaseSource()
        } else {
            _ = destinationWorker?.submit(.release(self))
        }
    }

    /// The oldest ticket's event when it is answered (`.some(nil)`: it was dropped), else nil.
    private func popReady() -> Event?? {
        order.withLock { o -> Event?? in
            guard case .done(let event)? = o.slots[o.head] else { return nil }
            o.slots[o.head] = nil
            o.head += 1
            return .some(event)
        }
    }

    private func released() {
        backlog.subtract(1, ordering: .releasing)
        settled.lock()
        settled.broadcast()
        settled.unlock()
    }

    /// On the queue: source events that are ready go through the rest of the client's timeline.
    func releaseSource() {
        while let ready = popReady() {
            if let event = ready { analytics?.timeline.processResumed(event, after: self) }
            released()
        }
    }

    /// The worker of this chain's destination.
    var destinationWorker: DestinationWorker? {
        guard let destinationKey else { return nil }
        return analytics?.timeline.worker(forKey: destinationKey)
    }

    /// Flush, reset and the end wait (within the deadline) for what is in the chain, so that it
    /// reaches what follows before them. On a destination's worker, what is ready is delivered
    /// here; an inline destination's flush only waits (releases take its lock).
    func settle(waitingForRelease: Bool) {
        // Not on the chain's own queue (a middleware flushing from its continuation): that queue
        // is what would release them.
        guard backlog.load(ordering: .acquiring) > 0, DispatchQueue.getSpecific(key: Self.queueKey) == nil else { return }
        let deadline = monotonicSeconds() + timeout + 1
        guard let destinationKey else {
            waitUntil(deadline) { backlog.load(ordering: .acquiring) == 0 }
            return
        }
        guard let worker = analytics?.timeline.worker(forKey: destinationKey) else { return }
        waitUntil(deadline) { order.withLock { $0.waiting == 0 } }
        if !worker.isInline { releaseReady(on: worker) }
    }

    private func waitUntil(_ deadline: Double, _ done: () -> Bool) {
        settled.lock()
        defer { settled.unlock() }
        while !done() {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return }
            _ = settled.wait(until: Date(timeIntervalSinceNow: min(left, 1)))
        }
    }
}

extension MiddlewarePlugin: ReleasesLater {
    /// On the destination's worker: events that are ready go through the rest of its timeline.
    func releaseReady(on worker: DestinationWorker) {
        for event in order.withLock({ o -> [Event] in defer { o.unordered.removeAll() }; return o.unordered }) {
            worker.deliverReleased(event, after: self)
        }
        while let ready = popReady() {
            if let event = ready { worker.deliverReleased(event, after: self) }
            released()
        }
    }
}
