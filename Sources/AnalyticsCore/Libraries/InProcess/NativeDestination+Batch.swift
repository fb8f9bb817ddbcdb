import Foundation

/// A destination that gathers the events of one drain of its queue and hands them on together
/// when the worker has nothing more at hand.
protocol DeliversInRuns: DestinationPlugin {
    func endOfRun()
}

/// ABI 1.3 `AH_EXT_BATCH` for a library in this process: events gather in `run` while the worker
/// drains its queue and go to the library in one call when the queue is empty, the run is full,
/// or any other hook is due (so the library sees everything in order). Counting is that of a
/// single-event call: an event counts as delivered when gathered and moves to dropped (and
/// failed) if the library's answer for it is a failure in the end.
extension NativeDestination {
    func gather(_ event: Event, upTo size: Int) -> Event? {
        run.append(event)
        if run.count >= size { deliverRun() }
        return event
    }

    func endOfRun() { deliverRun() }

    /// Calls the batch hook with what was gathered; retryable events go again, in order, with
    /// backoff; the rest of the failures are reported and counted.
    func deliverRun() {
        guard !run.isEmpty else { return }
        var events = run
        run.removeAll(keepingCapacity: true)
        var attempt = 1
        while !events.isEmpty {
            let results = integration.deliver(batch: events.map(\.serializedBytes))
            var again: [Event] = []
            for (event, result) in zip(events, results) {
                switch result {
                case .ok: continue
                case .retryable where attempt < retryPolicy.maxAttempts: again.append(event)
                default:
                    _ = reportFailure(event.type.rawValue, result, attempts: attempt, countsAsEvent: true)
                    recount(to: .dropped)
                }
            }
            guard !again.isEmpty else { return }
            Thread.sleep(forTimeInterval: retryPolicy.delay(afterAttempt: attempt, hint: integration.retryHint))
            attempt += 1
            events = again
        }
    }
}
