import CAnalyticsABI
import Foundation

/// A destination that acts, on its worker, on answers that arrived from other threads.
protocol SettlesLater: DestinationPlugin {
    func settle()
}

/// An event whose hook answered pending, with the attempt that answered.
struct ParkedEvent {
    let event: EncodedEvent
    let attempt: Int
    /// Its ticket in a durable queue (finished when the answer is final).
    let ticket: UInt64?
}

/// ABI 1.3 `AH_EXT_FINISH_LATER` for a library in this process: the worker goes on with the next
/// events while answers come in from the library's threads; they are acted on here, on the
/// worker, in the order the events first arrived (a `settle` item wakes an idle worker).
///
/// Counting: an event that answered pending counts as delivered when it is handed over; if its
/// answer is a failure it is counted failed as well (as a synchronous failure is: a summary shows
/// delivered − failed), if it times out it moves to abandoned, so the totals are what a
/// synchronous answer would have given, and what process mode counts.
extension NativeDestination {
    func executeAllowingPending(_ event: EncodedEvent) -> Bool {
        settleArrived()
        let pending = integration.pendingCalls
        let room = monotonicSeconds() + hookTimeout
        while parked.count >= pending.maxPending {
            pending.waitForArrival(until: room)
            settleArrived()
            if monotonicSeconds() >= room { break }
        }
        return deliverEvent(event, attempt: 1, ticket: completions?.take())
    }

    func settle() { settleArrived() }

    /// How long a flush or the end waits for pending answers: most of the hook timeout, leaving
    /// the rest of the host's budget for that step (a worker over it is abandoned whole).
    var pendingWaitBudget: Double { hookTimeout * 0.8 }

    /// Calls the hook until it answers (or parks the event); false once it failed for good.
    func deliverEvent(_ event: EncodedEvent, attempt first: Int, ticket: UInt64?) -> Bool {
        var attempt = first
        while true {
            switch integration.deliverAllowingPending(event) {
            case .pending(let token):
                // Parked first: an answer that comes meanwhile waits in `pendingCalls` until the
                // next settle, on this thread (park also arms the expiry wake-up).
                parked[token] = ParkedEvent(event: event, attempt: attempt, ticket: ticket)
                integration.pendingCalls.park(token, timeout: hookTimeout)
                return true
            case .done(.ok):
                finish(ticket)
                return true
            case .done(let result):
                if case .retryable = result, attempt < retryPolicy.maxAttempts {
                    Thread.sleep(forTimeInterval: retryPolicy.delay(afterAttempt: attempt, hint: integration.retryHint))
                    attempt += 1
                    continue
                }
                finish(ticket)
                return reportFailure(event.type.rawValue, result, attempts: attempt, countsAsEvent: true)
            }
        }
    }

    /// The event of `ticket` has its final answer: it may leave the durable queue.
    func finish(_ ticket: UInt64?) {
        if let ticket { completions?.finish(ticket) }
    }

    /// Acts on the answers that arrived, oldest event first, and on calls past their deadline.
    ///
    /// A call past its deadline (no answer from the library for the hook timeout) is abandoned,
    /// unless its event is on a durable queue: then it is answered retryable (called again, as
    /// any retryable answer is), and once its attempts are spent it stays on the queue for the
    /// next run, counted abandoned. A durable destination never loses an event to the timeout.
    func settleArrived() {
        let pending = integration.pendingCalls
        var retries: [ParkedEvent] = []
        let (late, refusals, answers) = pending.collect()
        if !late.isEmpty {
            var gone: [UInt64] = [], kept: [UInt64] = []
            for token in late {
                guard let p = parked[token] else { continue }
                if p.ticket == nil {
                    gone.append(token)
                } else if p.attempt < retryPolicy.maxAttempts {
                    retries.append(parked.removeValue(forKey: token)!)
                } else {
                    kept.append(token)
                }
            }
            let reason = "no answer within \(hookTimeout) s"
            abandon(tokens: gone, reason: reason, crossOff: true)
            abandon(tokens: kept, reason: reason + " after \(retryPolicy.maxAttempts) attempts; kept on the durable queue for the next run", crossOff: false)
            if !retries.isEmpty {
                integration.hostLog(.warn, "\(retries.count) call\(retries.count == 1 ? "" : "s") answered pending, then \(reason); called again (on the durable queue until answered)")
            }
        }
        for refusal in refusals { integration.notice(Int32(AH_NOTICE_REFUSED), refusal) }
        for (token, result) in answers {
            guard let p = parked.removeValue(forKey: token) else { continue }
            switch result {
            case .ok:
                finish(p.ticket)
                continue
            case .retryable where p.attempt < retryPolicy.maxAttempts:
                retries.append(p)
            default:
                finish(p.ticket)
                failedForGood(p.event.type.rawValue, result, attempts: p.attempt)
            }
        }
        guard !retries.isEmpty else { return }
        // One backoff for the round (a batch the vendor refused comes back as many answers at once),
        // then the events again, in the order they first arrived.
        Thread.sleep(forTimeInterval: retryPolicy.delay(afterAttempt: retries.map(\.attempt).min()!, hint: integration.retryHint))
        for p in retries where !deliverEvent(p.event, attempt: p.attempt + 1, ticket: p.ticket) && !integration.isCallable { countAbandoned() }
    }

    /// An event counted as delivered when it was handed over whose answer is a failure in the end:
    /// reported and counted failed, as a synchronous failure is; abandoned if the host gave up on
    /// the instance meanwhile (as the call in flight then is).
    func failedForGood(_ what: String, _ result: NativeHookResult, attempts: Int) {
        if !reportFailure(what, result, attempts: attempts, countsAsEvent: true), !integration.isCallable {
            countAbandoned()
        }
    }

    /// Waits for the answers of every parked event until `deadline`, acting on each.
    func settlePending(until deadline: Double) {
        settleArrived()
        while !parked.isEmpty, monotonicSeconds() < deadline {
            integration.pendingCalls.waitForArrival(until: deadline)
            settleArrived()
        }
    }

    /// Gives up on every event still parked (the instance ends).
    func abandonParked(reason: String) {
        abandon(tokens: parked.keys.sorted(), reason: reason, crossOff: false)
    }

    /// `crossOff`: the events leave a durable queue (they passed the hook timeout); otherwise
    /// (the instance ends) they stay on disk for the next run.
    private func abandon(tokens: [UInt64], reason: String, crossOff: Bool) {
        var types: [String] = []
        for token in tokens {
            guard let p = parked.removeValue(forKey: token) else { continue }
            if crossOff { finish(p.ticket) }
            types.append(callName(for: p.event.type))
            countAbandoned()
        }
        guard !types.isEmpty else { return }
        let what = types.count == 1 ? "1 call (\(types[0]))" : "\(types.count) calls (\(Set(types).sorted().joined(separator: ", ")))"
        let text = "\(what) answered pending, then \(reason); abandoned (counted as abandoned)"
        client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: text))
        integration.notice(Int32(AH_NOTICE_ABANDONED), text)
    }

    /// An event counted as delivered when it was handed over that the host gave up on instead.
    func countAbandoned() {
        guard let stats = client.withLock({ $0.stats }) else { return }
        stats._delivered.wrappingSubtract(1, ordering: .relaxed)
        stats._abandoned.wrappingAdd(1, ordering: .relaxed)
    }
}
