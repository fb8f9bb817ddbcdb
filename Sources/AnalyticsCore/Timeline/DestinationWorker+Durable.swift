import Foundation

/// The worker of a durable destination: its events wait on disk (``DurableFeed``), not in memory.
///
/// Accepting an event means appending it to the destination's queue (it survives SIGKILL). The
/// worker hands the events over from there in order, each with a ticket (``EventCompletions``),
/// and crosses an event off once its answer is final. Control items (settings, reset, flush, ...)
/// stay in memory, each handled once the events accepted before it were handed over (its
/// barrier, an earlier run's events included), except a first control item that came before any
/// event: the initial settings go before what an earlier run left. Answers that arrive from
/// other threads wake the worker, which asks the destination to act on them (`SettlesLater`) and
/// crosses off what finished.
///
/// Counting is that of the in-memory worker: an event counts as received when accepted (the
/// backlog of an earlier run when the queue opens), delivered or dropped when handed over; the
/// destination moves it to failed or abandoned if its answer says so. An abandoned worker's
/// events stay on disk for the next run.
extension DestinationWorker {
    /// Most events handed over in one turn (between two looks at control items and answers).
    static let durableChunk = 256

    /// An event for a durable destination: stored on disk (called with `condition` locked;
    /// unlocks). A store that fails is reported and the event counted failed.
    func submitDurable(_ event: Event, _ bytes: [UInt8], _ feed: DurableFeed) -> Bool {
        do {
            try feed.append(bytes)
        } catch {
            condition.unlock()
            stats.recordFailure()
            report(.storage("destination \(destination.key): \(event.type.rawValue) event \(event.messageId ?? "(no messageId)") "
                + "could not be stored in its queue \(feed.queue.directory) (\(error)); counted failed"))
            return true
        }
        queuedEvents += 1
        appendedThisRun += 1
        let wake = consumer == .sleeping
        if wake { consumer = .running }
        let everyone = producersWaiting > 0
        condition.unlock()
        if wake { if everyone { condition.broadcast() } else { condition.signal() } }
        return true
    }

    /// Answers arrived (a ticket finished, or a library's completion is waiting to be acted on).
    func answersArrivedFromAnyThread() {
        condition.lock()
        answersArrived = true
        let wake = consumer == .sleeping
        if wake { consumer = .running }
        condition.unlock()
        if wake { condition.broadcast() }
    }

    private enum Turn {
        case control(Item)
        case events(limit: Int, appendedSoFar: Int)
        case answers
        case last
        case gone
    }

    func runDurable(_ feed: DurableFeed) {
        PipelineThread.markForever()
        var plan = destination.timeline.deliveryPlan()
        var backlogLeft = feed.backlog
        // What an earlier run left waits for the destination's first control item (its initial
        // settings), or this run's first event, or the stop.
        var controlSeen = false
        while true {
            settleDurable(feed)
            condition.lock()
            var turn: Turn = .gone
            while true {
                if abandoned { turn = .gone; break }
                if queueCount > 0 && barriers[queueHead] <= handedFromFeed {
                    controlSeen = true
                    turn = .control(queue[queueHead])
                    queueHead += 1
                    if queueHead == queue.count {
                        queue.removeAll(keepingCapacity: true)
                        barriers.removeAll(keepingCapacity: true)
                        queueHead = 0
                    }
                    break
                }
                if queuedEvents > 0 && feed.room > 0 && (backlogLeft == 0 || controlSeen || appendedThisRun > 0 || stopping) {
                    turn = .events(limit: min(queuedEvents, Self.durableChunk), appendedSoFar: appendedThisRun)
                    break
                }
                if answersArrived { turn = .answers; break }
                if stopping && queueCount == 0 && queuedEvents == 0 { turn = .last; break }
                consumer = .sleeping
                condition.wait()
            }
            consumer = .running
            let wakeProducers = producersWaiting > 0
            condition.unlock()
            if wakeProducers { condition.broadcast() }
            switch turn {
            case .gone:
                return endDurable(feed)
            case .answers:
                continue
            case .control(let item):
                if !handleOne(item, &plan, feed) { return endDurable(feed) }
            case .events(let limit, let appendedSoFar):
                // A destination that takes text alone (nothing else in its timeline) gets the
                // stored text as it is.
                let entries = feed.next(limit: limit, asText: taker != nil && destination.timeline.isBare(&plan))
                condition.lock()
                if entries.isEmpty {
                    if feed.room > 0 {
                        // Nothing more on disk: every event accepted so far was handed over
                        // (or removed by the disk cap, reported apart).
                        handedFromFeed = max(handedFromFeed, feed.backlog + appendedSoFar)
                        queuedEvents = max(0, appendedThisRun - appendedSoFar)
                        backlogLeft = 0
                    }
                } else {
                    backlogLeft -= min(entries.count, backlogLeft)
                    handedFromFeed = min(feed.backlog + appendedThisRun, handedFromFeed + entries.count)
                    queuedEvents = max(0, queuedEvents - entries.count)
                }
                let wake = producersWaiting > 0
                condition.unlock()
                if wake { condition.broadcast() }
                if !handOver(entries, &plan) { return endDurable(feed) }
            case .last:
                condition.lock()
                inShutdown = true
                condition.unlock()
                destination.timeline.shutdownAll()
                destination.shutdown()
                settleDurable(feed)
                return endDurable(feed)
            }
        }
    }

    /// Acts on answers that arrived and crosses off what finished.
    private func settleDurable(_ feed: DurableFeed) {
        condition.lock()
        let arrived = answersArrived
        answersArrived = false
        condition.unlock()
        if arrived { (destination as? SettlesLater)?.settle() }
        guard let completions else { return }
        let finished = completions.drain()
        if !finished.isEmpty {
            feed.finish(finished)
            stats.setQueued(feed.pendingEvents)
        }
    }

    /// Handles one control item the way `run` does (counted unless `abandon` took it first). A
    /// flush's caller is let go only once what it delivered is crossed off the disk.
    private func handleOne(_ item: Item, _ plan: inout Timeline.DeliveryPlan, _ feed: DurableFeed) -> Bool {
        publish([item])
        guard case .flush(let caller) = item else {
            _ = handle(item, &plan)
            return cursor.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
        }
        let own = DispatchGroup()
        own.enter()
        _ = handle(.flush(own), &plan)
        // `abandon` lets the caller go itself if it took the item first.
        guard cursor.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { return false }
        settleDurable(feed)
        caller.leave()
        return true
    }

    /// Hands events over, each with its ticket; a ticket the destination did not take is
    /// finished when its call returns. False once the worker was abandoned meanwhile.
    private func handOver(_ entries: [DurableFeed.Entry], _ plan: inout Timeline.DeliveryPlan) -> Bool {
        guard let completions, !entries.isEmpty else { return true }
        var items: [Item] = []
        items.reserveCapacity(entries.count)
        var unreadable: [UInt64] = []
        var tickets: [UInt64] = []
        for entry in entries {
            if let encoded = entry.encoded {
                items.append(.encoded(encoded))
            } else if let event = entry.event {
                items.append(.event(event))
            } else {
                unreadable.append(entry.ticket)
                continue
            }
            tickets.append(entry.ticket)
        }
        if !unreadable.isEmpty {
            stats.recordFailure(unreadable.count)
            report(.storage("destination \(destination.key): \(unreadable.count) stored entr\(unreadable.count == 1 ? "y is" : "ies are") "
                + "not an event; crossed off and counted failed"))
            completions.finish(unreadable)
        }
        publish(items)
        var finishedNow: [UInt64] = []
        for (i, item) in items.enumerated() {
            completions.handing(tickets[i])
            let outcome = handle(item, &plan)
            if let ticket = completions.untaken() { finishedNow.append(ticket) }
            guard cursor.compareExchange(expected: i, desired: i + 1, ordering: .acquiringAndReleasing).exchanged else {
                return false
            }
            switch outcome {
            case .delivered: stats._delivered.wrappingAdd(1, ordering: .relaxed)
            case .dropped: stats._dropped.wrappingAdd(1, ordering: .relaxed)
            case .control: break
            }
        }
        (destination as? DeliversInRuns)?.endOfRun()
        if !finishedNow.isEmpty { completions.finish(finishedNow) }
        return true
    }

    /// Makes `items` the work in progress (what `abandon` counts if a call never returns).
    private func publish(_ items: [Item]) {
        condition.lock()
        inProgress = items
        inProgressStart = 0
        generation &+= 1
        cursor.store(0, ordering: .releasing)
        condition.unlock()
    }

    private func endDurable(_ feed: DurableFeed) {
        condition.lock()
        let wasAbandoned = abandoned
        done = true
        inProgress = []
        inProgressStart = 0
        condition.unlock()
        if !wasAbandoned { settleDurable(feed) }
        feed.close()
        finished.signal()
    }
}
