import Foundation

/// Drains one destination's bounded queue on its own thread, so that the destination sees events in
/// call order, is never called concurrently, and can block without slowing callers or other
/// destinations. When the queue is full the oldest event is dropped, counted and reported.
///
/// An ``InlineDestination`` gets no thread and no queue: its events, settings and resets run on the
/// caller's thread inside the fan-out (which is serialised, so the order and "never concurrently"
/// rules still hold), and a call returns only after the destination has handled the event.
final class DestinationWorker: @unchecked Sendable {
    enum Item {
        case event(Event)
        case update(Settings, UpdateType)
        case reset
        case flush(DispatchGroup)
    }

    let destination: DestinationPlugin
    let stats = DestinationStats()
    private let capacity: Int
    private let overflow: OverflowPolicy
    private let report: @Sendable (AnalyticsError) -> Void

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var queue = RingBuffer<Item>()
    private var queuedEvents = 0
    private var consumer = ConsumerState.running
    private var controlPending = false
    /// A woken worker waits this long for more events before draining, unless `lingerBatch`
    /// events or a control call arrive first: one wake-up per batch instead of one per event.
    private static let linger = 0.001
    private static let lingerBatch = 256
    private enum ConsumerState { case running, sleeping, lingering }
    private var stopping = false
    private var overflowSinceReport = 0
    private var producersWaiting = 0

    private let finished = DispatchSemaphore(value: 0)
    /// Set for an ``InlineDestination``: items are handled on the caller's thread under this lock.
    private let inline: Locked<Bool>?

    var isInline: Bool { inline != nil }

    init(destination: DestinationPlugin, capacity: Int, overflow: OverflowPolicy = .dropOldest,
         report: @escaping @Sendable (AnalyticsError) -> Void) {
        self.destination = destination
        self.capacity = max(1, capacity)
        self.overflow = overflow
        self.report = report
        if destination is InlineDestination {
            inline = Locked(false)
            return
        }
        inline = nil
        let thread = Thread { [self] in run() }
        thread.name = "destination \(destination.key)"
        thread.start()
    }

    /// Queues an item; never blocks on the destination.
    func submit(_ item: Item) {
        if let inline {
            submitInline(item, inline)
            return
        }
        condition.lock()
        guard !stopping else { condition.unlock(); return }
        if case .event = item {
            stats._received.wrappingAdd(1, ordering: .relaxed)
            if case .wait(let limit) = overflow, queuedEvents >= capacity {
                // Backpressure: hold the caller until the worker drains (bounded by `limit`).
                let deadline = limit.isFinite ? Date(timeIntervalSinceNow: limit) : Date.distantFuture
                producersWaiting += 1
                if consumer != .running { condition.broadcast() }
                while queuedEvents >= capacity && !stopping && Date() < deadline { _ = condition.wait(until: deadline) }
                producersWaiting -= 1
                if stopping { condition.unlock(); return }
            }
            if queuedEvents >= capacity {
                if case .event? = queue.first { queue.removeFirst() } else {
                    queue.removeFirst { if case .event = $0 { return true } else { return false } }
                }
                queuedEvents -= 1
                overflowSinceReport += 1
                stats._overflowed.wrappingAdd(1, ordering: .relaxed)
            }
            queuedEvents += 1
        }
        queue.append(item)
        if case .event = item {} else { controlPending = true }
        // Producers may be waiting on the same condition (backpressure): wake everyone then, so
        // the worker cannot miss its wake-up.
        let shouldWake: Bool
        switch consumer {
        case .sleeping: shouldWake = true
        case .lingering: shouldWake = controlPending || queue.count >= Self.lingerBatch
        case .running: shouldWake = false
        }
        if shouldWake { if producersWaiting > 0 { condition.broadcast() } else { condition.signal() } }
        condition.unlock()
    }

    /// Processes what is queued, shuts the destination down and ends the thread. Returns false if
    /// the destination did not finish within `timeout` seconds.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        if let inline {
            // No queue to drain: every call already returned. Later calls are ignored.
            let wasStopped = inline.withLock { stopped -> Bool in defer { stopped = true }; return stopped }
            if !wasStopped {
                destination.timeline.shutdownAll()
                destination.shutdown()
            }
            return true
        }
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        return finished.wait(timeout: .now() + timeout) == .success
    }

    private func run() {
        var batch: [Item] = []
        batch.reserveCapacity(256)
        while true {
            condition.lock()
            while queue.isEmpty && !stopping {
                consumer = .sleeping
                condition.wait()
            }
            if !stopping && !controlPending && queue.count < Self.lingerBatch {
                consumer = .lingering
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.linger))
            }
            consumer = .running
            controlPending = false
            let done = queue.isEmpty && stopping
            queue.drain(into: &batch)
            queuedEvents = 0
            if producersWaiting > 0 { condition.broadcast() }
            let overflowed = overflowSinceReport
            overflowSinceReport = 0
            condition.unlock()

            if overflowed > 0 {
                report(.queueOverflow(destination: destination.key, dropped: overflowed, capacity: capacity))
            }
            for item in batch { handle(item) }
            batch.removeAll(keepingCapacity: true)
            if done { break }
        }
        destination.timeline.shutdownAll()
        destination.shutdown()
        finished.signal()
    }

    /// An inline destination's item, on the caller's thread. A flush runs outside the lock: it may
    /// wait for the network, and calls must not wait for it (inline destinations allow that).
    private func submitInline(_ item: Item, _ lock: Locked<Bool>) {
        if case .flush = item {
            if lock.withLock({ $0 }) {
                if case .flush(let group) = item { group.leave() }
                return
            }
            handle(item)
            return
        }
        lock.withLock { stopped in
            guard !stopped else { return }
            if case .event = item { stats._received.wrappingAdd(1, ordering: .relaxed) }
            handle(item)
        }
    }

    private func handle(_ item: Item) {
        switch item {
        case .event(let event):
            if destination.timeline.deliver(event, to: destination).reached {
                stats._delivered.wrappingAdd(1, ordering: .relaxed)
            } else {
                stats._dropped.wrappingAdd(1, ordering: .relaxed)
            }
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
        }
    }
}
