import Foundation
import Synchronization

/// Drains one destination's bounded queue on its own thread, so that the destination sees events in
/// call order, is never called concurrently, and can block without slowing callers or other
/// destinations. When the queue is full the oldest event is dropped, counted and reported.
///
/// A destination whose call never returns (a hung library hook) is abandoned when it does not
/// stop in time at shutdown, or, for a loaded library, when a producer waiting for room sees it
/// stuck in one call for `hookTimeout`: its undelivered events (queued and in flight) are counted
/// as abandoned, it is never called again, and its thread is left to finish that call alone.
///
/// An ``InlineDestination`` gets no thread and no queue: its events, settings and resets run on the
/// caller's thread inside the fan-out (which is serialised, so the order and "never concurrently"
/// rules still hold), and a call returns only after the destination has handled the event.
final class DestinationWorker: @unchecked Sendable {
    enum Item {
        case event(Event)
        /// An event as its text alone, for a destination that takes nothing else (`takesText`).
        case encoded(EncodedEvent)
        case update(Settings, UpdateType)
        case reset
        case flush(DispatchGroup)
        /// Shutdown's first step: producers hear it while every destination still runs.
        case announceStopping(DispatchGroup)
        /// An application event (`Analytics.application`), in order with the events.
        case application(ApplicationEvent)
        /// Answers of calls that finished later arrived (`SettlesLater`): act on them now.
        case settle
        /// A plugin of the destination's timeline has events to let through (`ReleasesLater`).
        case release(any ReleasesLater)

        var isEvent: Bool {
            switch self {
            case .event, .encoded: return true
            default: return false
            }
        }
        var group: DispatchGroup? {
            switch self {
            case .flush(let g), .announceStopping(let g): return g
            default: return nil
            }
        }
    }

    let destination: DestinationPlugin
    let stats = DestinationStats()
    /// The destination's capabilities that fan-out asks for every event, looked up once.
    let selective: EventTypeSelective?
    /// The destination, when it can take an event as text alone.
    let taker: TakesEncodedEvents?
    /// Whether fan-out may queue events to this destination as text alone: it takes them so, and
    /// nothing else is in its timeline (kept by the worker as its delivery plan changes; an event
    /// queued as text under a stale answer is read back into values).
    var takesText: Bool { wantsText.load(ordering: .relaxed) }
    private let wantsText = Atomic<Bool>(false)
    @exclusivity(unchecked) private var wantsTextNow = false
    let receivesWholeSettings: Bool
    let capacity: Int
    private let overflow: OverflowPolicy
    let report: @Sendable (AnalyticsError) -> Void
    /// Set for a durable destination (ABI 1.3 `AH_EXT_DURABLE`, or `"durable": true` in its
    /// settings): its events wait on disk instead of in `queue`, which then holds control items
    /// only, each after `barriers[i]` events of this run (see DestinationWorker+Durable.swift).
    let feed: DurableFeed?
    let completions: EventCompletions?
    /// Guarded by `condition`: events of this run appended to the feed; events handed over from
    /// it (an earlier run's backlog included); barriers of the control items in `queue` (events
    /// to hand over before each, backlog included, except for a first control item that came
    /// before any event: the initial settings go first); whether answers arrived since the
    /// worker last looked.
    var appendedThisRun = 0
    var handedFromFeed = 0
    var barriers: [Int] = []
    var controlQueuedYet = false
    var answersArrived = false

    // Guarded by `condition`. Items wait in `queue[queueHead...]`; the worker takes them all at once
    // by swapping buffers (O(1) under the lock, whatever the batch size), so a producer never waits
    // long for the lock, and the dropped head of a full queue costs O(1) too.
    let condition = NSCondition()
    var queue: [Item] = []
    var queueHead = 0
    var queuedEvents = 0
    var consumer = ConsumerState.running
    private var controlPending = false
    /// A woken worker waits this long for more events before draining, unless `lingerBatch`
    /// events or a control call arrive first: one wake-up per batch instead of one per event.
    private static let linger = 0.001
    private static let lingerBatch = 256
    /// Items waiting (guarded by `condition`).
    var queueCount: Int { queue.count - queueHead }
    enum ConsumerState { case running, sleeping, lingering }
    var stopping = false
    private var overflowSinceReport = 0
    var producersWaiting = 0

    let finished = DispatchSemaphore(value: 0)
    /// Set for an ``InlineDestination``: items are handled on the caller's thread under this lock.
    private let inline: Locked<Bool>?
    /// The inline destination's stopped flag, readable without its lock: `hasRoom` is asked by a
    /// library's `send_event`, which may come from inside this destination's own call.
    private let inlineStopped = Atomic<Bool>(false)

    var isInline: Bool { inline != nil }
    /// The batch being handled: `inProgress[inProgressStart...]` (replaced under `condition`, read
    /// by `abandon`; the worker reads it without the lock, nobody writes it meanwhile).
    var inProgress: [Item] = []
    var inProgressStart = 0
    /// The previous batch, emptied by the worker outside the lock and reused as the next queue.
    private var spare: [Item] = []
    /// Index in `inProgress` of the item being handled; `Self.abandonedCursor` once abandoned. The
    /// worker advances it by compare-and-exchange, so an item is counted either by the worker
    /// (delivered, dropped) or by `abandon` (abandoned), never both.
    let cursor = Atomic<Int>(0)
    private static let abandonedCursor = Int.min
    // Guarded by `condition`.
    var abandoned = false
    var inShutdown = false
    var done = false

    /// A library's call that has not returned after this long, while a producer waits for room,
    /// makes the destination abandoned (see `abandon(after:)`). Never Segment.io or an in-process
    /// destination: those may legitimately block (a flush waiting for uploads).
    private let hookTimeout: Double
    private let abandonableWhileRunning: Bool
    /// Drains so far (with `cursor`, tells a waiting producer whether the worker moves at all).
    /// Guarded by `condition`.
    var generation = 0

    init(destination: DestinationPlugin, capacity: Int, overflow: OverflowPolicy = .dropOldest,
         hookTimeout: Double = 10, feed: DurableFeed? = nil, report: @escaping @Sendable (AnalyticsError) -> Void) {
        self.destination = destination
        self.feed = destination is InlineDestination ? nil : feed
        self.completions = self.feed == nil ? nil : EventCompletions()
        self.capacity = max(1, capacity)
        self.overflow = overflow
        self.hookTimeout = hookTimeout
        self.abandonableWhileRunning = destination is AbandonableDestination
        self.selective = destination as? EventTypeSelective
        self.taker = destination as? TakesEncodedEvents
        self.receivesWholeSettings = (destination as? WholeSettingsDestination)?.receivesWholeSettings ?? false
        self.report = report
        if destination is InlineDestination {
            inline = Locked(false)
            return
        }
        inline = nil
        if let completions {
            completions.wakes { [weak self] in self?.answersArrivedFromAnyThread() }
            (destination as? FinishesEventsLater)?.finishEvents(through: completions)
            if let feed, feed.backlog > 0 {
                stats._received.wrappingAdd(feed.backlog, ordering: .relaxed)
                stats.setQueued(feed.backlog)
                queuedEvents = feed.backlog
            }
        }
        let thread = Thread { [self] in if let feed { runDurable(feed) } else { run() } }
        thread.name = "destination \(destination.key)"
        thread.start()
    }

    /// Whether an event would be queued now without waiting or dropping another.
    func hasRoom() -> Bool {
        if inline != nil { return !inlineStopped.load(ordering: .acquiring) }
        condition.lock()
        defer { condition.unlock() }
        // A durable queue takes events up to its disk cap, unless producers are to wait.
        if feed != nil, case .dropOldest = overflow { return abandoned || !stopping }
        return abandoned || (!stopping && queuedEvents < capacity)
    }

    /// Queues an item (false: the worker is stopping and took nothing). Never blocks on the
    /// destination; an event may wait for room under the `.wait` overflow policy.
    /// An abandoned destination takes events no more: each is counted as abandoned at once (the
    /// report named the call that hung), and control calls are let go.
    @discardableResult
    func submit(_ item: Item) -> Bool {
        if let inline { return submitInline(item, inline) }
        var stored: [UInt8] = []
        if feed != nil {
            switch item {
            case .event(let event): stored = event.serializedBytes  // outside the lock
            case .encoded(let event): stored = event.withText { [UInt8]($0) }
            case .settle: answersArrivedFromAnyThread(); return true  // not ordered with events
            default: break
            }
        }
        condition.lock()
        if abandoned {
            condition.unlock()
            if item.isEvent {
                stats._received.wrappingAdd(1, ordering: .relaxed)
                stats._abandoned.wrappingAdd(1, ordering: .relaxed)
            }
            item.group?.leave()
            return true
        }
        guard !stopping else { condition.unlock(); return false }
        if item.isEvent {
            stats._received.wrappingAdd(1, ordering: .relaxed)
            if case .wait(let limit) = overflow, queuedEvents >= capacity {
                // Backpressure: hold the caller until the worker drains (bounded by `limit`),
                // unless the worker is stuck in one call for `hookTimeout`: then it is abandoned.
                let deadline = monotonicSeconds() + limit
                var seen = (generation, cursor.load(ordering: .relaxed))
                var since = monotonicSeconds()
                var stuck: Abandonment?
                producersWaiting += 1
                if consumer != .running { condition.broadcast() }
                while queuedEvents >= capacity && !stopping {
                    let now = monotonicSeconds()
                    if now >= deadline { break }
                    let mark = (generation, cursor.load(ordering: .relaxed))
                    if mark != seen {
                        (seen, since) = (mark, now)
                    } else if abandonableWhileRunning && now - since >= hookTimeout {
                        stuck = abandonLocked()
                        break
                    }
                    // At most a second per wait: `limit` may be infinite (the command's backpressure).
                    let wake = min(1, (abandonableWhileRunning ? min(deadline, since + hookTimeout) : deadline) - now)
                    _ = condition.wait(until: Date(timeIntervalSinceNow: max(0.001, wake)))
                }
                producersWaiting -= 1
                if let stuck {
                    condition.unlock()
                    stats._abandoned.wrappingAdd(1, ordering: .relaxed)
                    reportAbandonment(stuck, after: hookTimeout, extra: 1)
                    return true
                }
                if abandoned {
                    condition.unlock()
                    stats._abandoned.wrappingAdd(1, ordering: .relaxed)
                    return true
                }
                if stopping { condition.unlock(); return false }
            }
            if let feed {
                switch item {
                case .event(let event): return submitDurable(event, stored, feed)
                case .encoded(let event): return submitDurable(event.event, stored, feed)
                default: break
                }
            }
            if queuedEvents >= capacity {
                dropOldestEvent()
                queuedEvents -= 1
                overflowSinceReport += 1
                stats._overflowed.wrappingAdd(1, ordering: .relaxed)
            }
            queuedEvents += 1
        }
        queue.append(item)
        if let feed {
            barriers.append(!controlQueuedYet && appendedThisRun == 0 ? 0 : feed.backlog + appendedThisRun)
            controlQueuedYet = true
        }
        if !item.isEvent { controlPending = true }
        // Only a worker that waits is woken, and the wake-up is sent after unlocking (a worker
        // woken under the lock would block on it at once). Producers may be waiting on the same
        // condition (backpressure): wake everyone then, so the worker cannot miss its wake-up.
        let shouldWake: Bool
        switch consumer {
        case .sleeping: shouldWake = true
        case .lingering: shouldWake = controlPending || queueCount >= Self.lingerBatch
        case .running: shouldWake = false
        }
        let everyone = producersWaiting > 0
        if shouldWake { consumer = .running }  // one wake-up is enough
        condition.unlock()
        if shouldWake { if everyone { condition.broadcast() } else { condition.signal() } }
        return true
    }

    /// Removes the oldest queued event (under `condition`; the queue is full, so it holds one).
    private func dropOldestEvent() {
        if queue[queueHead].isEvent {
            queueHead += 1
            // Compact now and then: amortised O(1), and dropped events are released.
            if queueHead >= 64 && queueHead * 2 >= queue.count {
                queue.removeSubrange(0..<queueHead)
                queueHead = 0
            }
            return
        }
        if let i = queue[queueHead...].firstIndex(where: \.isEvent) { queue.remove(at: i) }
    }

    /// Processes what is queued, shuts the destination down and ends the thread. Returns false if
    /// the destination did not finish within `timeout` seconds.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        beginStop()
        return waitStopped(until: monotonicSeconds() + timeout)
    }

    /// Takes no more items; the worker drains its queue, shuts the destination down and ends.
    func beginStop() {
        if let inline {
            // No queue to drain: every call already returned. Later calls are ignored.
            let wasStopped = inline.withLock { stopped -> Bool in
                defer { stopped = true; inlineStopped.store(true, ordering: .releasing) }
                return stopped
            }
            if !wasStopped {
                destination.timeline.shutdownAll()
                destination.shutdown()
            }
            return
        }
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Whether the worker ended by `deadline` (monotonic seconds).
    func waitStopped(until deadline: Double) -> Bool {
        if inline != nil { return true }
        let wait = max(0, deadline - monotonicSeconds())
        guard finished.wait(timeout: .now() + wait) == .success else { return false }
        finished.signal()  // later waiters see it too
        return true
    }

    /// What `abandon` left behind, for the report.
    struct Abandonment {
        /// Undelivered events, now counted in `stats.abandoned` (in `stats.queued` when `kept`).
        var events: Int
        /// A durable destination's: its events are on disk until crossed off, so what it had not
        /// finished stays there for the next run.
        var kept = false
        /// The item whose call never returned (nil: the destination was stopping).
        var inFlight: Item?
    }

    /// Gives up on a worker whose destination did not return from a call within `seconds`: counts
    /// what it had not delivered as abandoned, releases flush waiters of calls it will never make,
    /// makes sure it calls the destination no more (not even `shutdown`) if that call ever
    /// returns, and reports it with the destination, the call and the event. False when the
    /// worker had ended after all (or was abandoned already).
    @discardableResult
    func abandon(after seconds: Double) -> Bool {
        if inline != nil { return false }  // every inline call returned before its caller went on
        condition.lock()
        let left = abandonLocked()
        condition.unlock()
        guard let left else { return false }
        reportAbandonment(left, after: seconds)
        return true
    }

    /// Says what was lost; the destination learns it is abandoned (a library's instance is then
    /// never called again nor destroyed, and its host table is revoked).
    private func reportAbandonment(_ left: Abandonment, after seconds: Double, extra: Int = 0) {
        let abandonable = destination as? AbandonableDestination
        let who = abandonable?.abandon() ?? "destination"
        let call: String
        func delivering(_ event: Event) -> String {
            let name = event.event ?? event.name
            return "\(abandonable?.callName(for: event.type) ?? "execute") while delivering \(event.type.rawValue)"
                + (name.map { " \"\($0)\"" } ?? "") + " event \(event.messageId ?? "(no messageId)")"
        }
        switch left.inFlight {
        case .event(let event)?: call = delivering(event)
        case .encoded(let event)?: call = delivering(event.event)
        case .update?: call = "update"
        case .reset?: call = "reset"
        case .flush?: call = "flush"
        case .announceStopping?: call = "lifecycle(stopping)"
        case .application(let event)?: call = "application_event(\(event.name))"
        case .settle?: call = "retrying calls that finished later"
        case .release?: call = "delivering events middleware let through later"
        case nil: call = abandonable?.stoppingStep ?? "shutdown"
        }
        let count = left.events + extra
        let events = count == 1 ? "1 event" : "\(count) events"
        let ended = abandonable == nil || call == "destroy" ? "" : "; destroy not called"
        let counted = left.kept && extra == 0 ? "they stay on disk for the next run, counted queued"
            : left.kept ? "those on disk stay there for the next run, counted queued; the one not stored and later ones counted as abandoned"
            : "counted as abandoned\(extra > 0 ? ", as are later ones" : "")"
        report(.plugin(name: destination.key, message: "\(who): \(call) did not return within \(seconds) s; "
            + "abandoned with \(events) undelivered (\(counted))\(ended)"))
    }

    /// `abandon(after:)` under `condition`; nil when the worker ended or was abandoned already.
    private func abandonLocked() -> Abandonment? {
        guard !done, !abandoned else { return nil }
        abandoned = true
        stopping = true
        var events = queuedEvents
        var later = Array(queue[queueHead...])
        queue.removeAll()
        barriers.removeAll()
        queueHead = 0
        queuedEvents = 0
        var inFlight: Item?
        let i = cursor.exchange(Self.abandonedCursor, ordering: .acquiringAndReleasing)
        let batch = inProgress[inProgressStart...]
        if !inShutdown, i >= 0, i < batch.count {
            let at = inProgressStart + i
            inFlight = inProgress[at]
            events += inProgress[at...].lazy.filter(\.isEvent).count
            later += inProgress[(at + 1)...]
        }
        for item in later { item.group?.leave() }
        if let feed {
            // On disk until crossed off: what it had not finished stays for the next run,
            // counted queued (as a process-mode durable destination stopped at its deadline).
            stats.setQueued(feed.pendingEvents)
        } else {
            stats._abandoned.wrappingAdd(events, ordering: .relaxed)
        }
        overflowSinceReport = 0
        condition.broadcast()
        return Abandonment(events: events, kept: feed != nil, inFlight: inFlight)
    }

    private func run() {
        PipelineThread.markForever()
        var plan = destination.timeline.deliveryPlan()
        while true {
            condition.lock()
            while queueCount == 0 && !stopping {
                consumer = .sleeping
                condition.wait()
            }
            if !stopping && !controlPending && queueCount < Self.lingerBatch {
                consumer = .lingering
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.linger))
            }
            if abandoned { condition.unlock(); break }
            consumer = .running
            controlPending = false
            let last = queueCount == 0 && stopping
            // Take the whole queue in O(1): the emptied buffer of the batch before becomes the
            // queue, the queue becomes the batch, and the batch before is cleared after unlocking.
            swap(&queue, &spare)
            swap(&inProgress, &spare)
            inProgressStart = queueHead
            queueHead = 0
            generation &+= 1
            cursor.store(0, ordering: .releasing)
            queuedEvents = 0
            let wakeProducers = producersWaiting > 0
            let overflowed = overflowSinceReport
            overflowSinceReport = 0
            condition.unlock()
            if wakeProducers { condition.broadcast() }
            spare.removeAll(keepingCapacity: true)

            if overflowed > 0 {
                report(.queueOverflow(destination: destination.key, dropped: overflowed, capacity: capacity))
            }
            var i = 0
            var gone = false
            let batch = inProgress[inProgressStart...]
            for item in batch {
                let outcome = handle(item, &plan)
                // Counted here unless `abandon` took this item first (then we stop calling).
                guard cursor.compareExchange(expected: i, desired: i + 1, ordering: .acquiringAndReleasing).exchanged else {
                    gone = true
                    break
                }
                switch outcome {
                case .delivered: stats._delivered.wrappingAdd(1, ordering: .relaxed)
                case .dropped: stats._dropped.wrappingAdd(1, ordering: .relaxed)
                case .control: break
                }
                i += 1
            }
            if gone { break }
            // The queue is drained: a destination that gathers events hands them on now.
            (destination as? DeliversInRuns)?.endOfRun()
            if last {
                condition.lock()
                inShutdown = true
                condition.unlock()
                destination.timeline.shutdownAll()
                destination.shutdown()
                break
            }
        }
        condition.lock()
        done = true
        inProgress = []
        inProgressStart = 0
        condition.unlock()
        finished.signal()
    }

    /// An inline destination's item, on the caller's thread. A flush runs outside the lock: it may
    /// wait for the network, and calls must not wait for it (inline destinations allow that).
    private func submitInline(_ item: Item, _ lock: Locked<Bool>) -> Bool {
        PipelineThread.run { submitInlineMarked(item, lock) }
    }

    private func submitInlineMarked(_ item: Item, _ lock: Locked<Bool>) -> Bool {
        if case .flush = item {
            if lock.withLock({ $0 }) {
                item.group?.leave()
                return false
            }
            var plan = destination.timeline.deliveryPlan()
            _ = handle(item, &plan)
            return true
        }
        return lock.withLock { stopped -> Bool in
            guard !stopped else { item.group?.leave(); return false }
            if item.isEvent { stats._received.wrappingAdd(1, ordering: .relaxed) }
            var plan = destination.timeline.deliveryPlan()
            switch handle(item, &plan) {
            case .delivered: stats._delivered.wrappingAdd(1, ordering: .relaxed)
            case .dropped: stats._dropped.wrappingAdd(1, ordering: .relaxed)
            case .control: break
            }
            return true
        }
    }

    enum Outcome { case delivered, dropped, control }

    func handle(_ item: Item, _ plan: inout Timeline.DeliveryPlan) -> Outcome {
        switch item {
        case .event(let event):
            let reached = destination.timeline.deliverReaching(event, to: destination, taker: taker, plan: &plan)
            if taker != nil { noteTextWanted(plan) }
            return reached ? .delivered : .dropped
        case .encoded(let event):
            let reached = destination.timeline.deliverReaching(event, to: destination, taker: taker, plan: &plan)
            noteTextWanted(plan)
            return reached ? .delivered : .dropped
        case .update(let settings, let type):
            destination.timeline.update(settings: settings, type: type)
            destination.update(settings: settings, type: type)
        case .reset:
            if destination.timeline.allows(.reset) {
                destination.timeline.resetAll()
                destination.reset()
            }
        case .flush(let group):
            if destination.timeline.allows(.flush) {
                destination.timeline.flushAll()
                destination.flush()
            }
            group.leave()
        case .announceStopping(let group):
            (destination as? StopAnnouncing)?.announceStopping()
            group.leave()
        case .application(let event):
            (destination as? ApplicationLifecycle)?.application(event)
        case .settle:
            (destination as? SettlesLater)?.settle()
        case .release(let plugin):
            plugin.releaseReady(on: self)
        }
        return .control
    }

    /// Tells fan-out whether to queue text alone from now on (only a change is written: fan-out
    /// reads the flag for every event).
    @inline(__always)
    private func noteTextWanted(_ plan: Timeline.DeliveryPlan) {
        let wanted = plan.isBare && feed == nil && inline == nil
        guard wanted != wantsTextNow else { return }
        wantsTextNow = wanted
        wantsText.store(wanted, ordering: .relaxed)
    }

    /// An event a plugin of the destination's timeline took and now lets through, on the worker
    /// (or under the inline lock): counted dropped when the plugin took it, delivered now if the
    /// destination sees it.
    func deliverReleased(_ event: Event, after plugin: Plugin) {
        if destination.timeline.deliverResumed(event, after: plugin, to: destination) {
            stats._dropped.wrappingSubtract(1, ordering: .relaxed)
            stats._delivered.wrappingAdd(1, ordering: .relaxed)
        }
    }
}

/// What a destination's full queue does with one more event.
public enum OverflowPolicy: Sendable, Equatable {
    /// Drop the oldest queued event, count it and report it: callers never wait (an app's UI
    /// thread must not stall because a destination is slow).
    case dropOldest
    /// Make the caller wait until the destination catches up, at most this many seconds, then drop
    /// the oldest as above: for batch ingestion, where losing events is worse than waiting.
    /// `.infinity` waits as long as it takes (the command: input slows, nothing is dropped).
    case wait(seconds: Double)
}
