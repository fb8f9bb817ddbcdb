import Foundation

/// A destination that gathers the events of one drain of its queue and hands them on together
/// when the worker has nothing more at hand.
protocol DeliversInRuns: DestinationPlugin {
    func endOfRun()
}

/// ABI 1.3 `AH_EXT_BATCH` for a library in this process: events gather in `run` while the worker
/// drains its queue and go to the library in one call when the queue is empty, the run is full,
/// or any other hook is due (so the library sees everything in order). Counting is that of a
/// single-event call: an event counts as delivered when gathered and as failed as well if the
/// library's answer for it is a failure in the end (a summary shows delivered − failed).
extension NativeDestination {
    func gather(_ event: EncodedEvent, upTo size: Int) {
        run.append(event)
        runTickets.append(completions?.take())
        if run.count >= size { deliverRun() }
    }

    func endOfRun() { deliverRun() }

    /// Calls the batch hook with what was gathered; retryable events go again, in order, with
    /// backoff; the rest of the failures are reported and counted.
    func deliverRun() {
        guard !run.isEmpty else { return }
        // Taken whole (not copied), and its buffers given back for the next run when done.
        var events = BatchRun()
        swap(&events, &run)
        var tickets: [UInt64?] = []
        swap(&tickets, &runTickets)
        defer {
            events.removeAll()
            if run.isEmpty { swap(&events, &run) }
            tickets.removeAll(keepingCapacity: true)
            if runTickets.isEmpty { swap(&tickets, &runTickets) }
        }
        var attempt = 1
        while !events.isEmpty {
            guard let results = integration.deliver(batch: events) else { return }
            var again = BatchRun()
            var againTickets: [UInt64?] = []
            for (i, result) in results.enumerated() {
                let ticket = i < tickets.count ? tickets[i] : nil
                switch result {
                case .ok: finish(ticket)
                case .retryable where attempt < retryPolicy.maxAttempts:
                    again.append(i, of: events)
                    againTickets.append(ticket)
                default:
                    finish(ticket)
                    failedForGood(events.items[i].type.rawValue, result, attempts: attempt)
                }
            }
            guard !again.isEmpty else { return }
            Thread.sleep(forTimeInterval: retryPolicy.delay(afterAttempt: attempt, hint: integration.retryHint))
            attempt += 1
            events = again
            tickets = againTickets
        }
    }
}
