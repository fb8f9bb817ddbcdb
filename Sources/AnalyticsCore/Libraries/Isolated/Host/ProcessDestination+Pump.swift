import CAnalyticsABI
import Foundation
import Glibc

extension ProcessDestination {
    // MARK: Pump

    func runPump() {
        var batch: [Item] = []
        while true {
            condition.lock()
            while outbox.count == outboxHead && !stopping && !(childGone && child != nil) { condition.wait() }
            if outbox.count == outboxHead && stopping { condition.unlock(); break }
            if outbox.count == outboxHead {
                // The process ended between batches (a timeline plugin crashed it, or one was
                // killed at its deadline): reported, and restarted now, so that its plugins
                // are back on the timeline without waiting for the next item.
                condition.unlock()
                let timeout = client.withLock { $0.hookTimeout }
                finishCrash(batch: [], answered: 0, sequence: batchSequence, timedOut: false, timeout: timeout)
                while child == nil && disabledReason == nil && !isStopping() { run([]) }
                continue
            }
            let take = min(max(1, min(limits.batchSize, ProgressPage.maxItems)), outbox.count - outboxHead)
            batch = Array(outbox[outboxHead..<(outboxHead + take)])
            outboxHead += take
            if outboxHead > 4096 && outboxHead * 2 > outbox.count {
                outbox.removeFirst(outboxHead)
                outboxHead = 0
            }
            if waitingForRoom > 0 { condition.broadcast() }
            let isDisabled = disabled != nil
            condition.unlock()
            if isDisabled {
                for item in batch { giveUp(item, counted: true) }
                continue
            }
            run(batch)
            // After `destroy` the child is done.
            if batch.last?.op == .destroy && child != nil { endChild() }
        }
        endChild()
        pidsCgroup?.remove()
        cgroup?.remove()
        condition.lock()
        pumpFinished = true
        condition.broadcast()
        condition.unlock()
        pumpDone.signal()
    }

    /// Sends one batch and reads its results; on a crash or hang, handles it and puts what was
    /// in flight back at the front of the queue.
    func run(_ items: [Item]) {
        let timeout = client.withLock { $0.hookTimeout }
        var batch = items
        if child == nil {
            let outcome = pendingStart ?? startChild(timeout: timeout)
            pendingStart = nil
            switch outcome {
            case .started(let replay): batch = replay + batch
            case .failed(let status, let during):
                crashed(status: status, during: during, culprit: nil, inFlight: [], requeue: items, timedOut: false, timeout: timeout)
                return
            case .refused(let why):
                let reason = why.hasPrefix("could not be created: ") ? String(why.dropFirst("could not be created: ".count)) : why
                client.withLock { $0.analytics.value }?.libraryProblems.notCreated(key: key, reason)
                disable(why)
                for item in items { giveUp(item, counted: true) }
                return
            }
        }
        guard let child else { return }
        var w = WireWriter()
        batchSequence &+= 1
        let sequence = batchSequence
        w.begin(.batch)
        w.u32(UInt32(batch.count))
        w.i64(Int64(bitPattern: sequence))
        for item in batch {
            w.u8(item.op.rawValue)
            // An event's text is read where the client wrote it, once for every destination.
            if let event = item.event { event.withText { w.data($0) } } else { w.data(item.bytes) }
            item.attempts += 1
        }
        w.end()
        var answered = 0
        condition.lock()
        awaitingResults = batch.count
        condition.unlock()
        var lastProgress = monotonicSeconds()
        // The item being called started when the one before it was answered. Empty results
        // frames (the runner waits to retry, or for answers of pending calls) move `lastProgress`
        // on, but never past the item's budget: the waits its retry policy allows, and a hook
        // deadline per attempt. A library that sends them from a hook that never returns is
        // still ended.
        var itemStarted = lastProgress
        let itemBudget = itemTimeBudget(timeout)
        if !child.send(w.bytes, deadline: lastProgress + timeout) {
            finishCrash(batch: batch, answered: 0, sequence: sequence, timedOut: !isGone(), timeout: timeout)
            return
        }
        while answered < batch.count {
            condition.lock()
            let beats = heartbeats
            let deadline = min(lastProgress + timeout, itemStarted + itemBudget)
            while incoming.isEmpty && !childGone && heartbeats == beats {
                if !condition.wait(until: Date(timeIntervalSinceNow: max(0, deadline - monotonicSeconds()))) { break }
                if monotonicSeconds() >= deadline { break }
            }
            let results = incoming
            incoming.removeAll(keepingCapacity: true)
            let gone = childGone
            let beat = heartbeats != beats
            condition.unlock()
            if results.isEmpty && beat && !gone && monotonicSeconds() < itemStarted + itemBudget {
                // The runner waits before retrying an item: not the library's time.
                lastProgress = monotonicSeconds()
                continue
            }
            if !results.isEmpty {
                for (status, message) in results where answered < batch.count {
                    complete(batch[answered], status: status, message: message)
                    answered += 1
                }
                // After handling them: a retry's backoff is not the library's time.
                lastProgress = monotonicSeconds()
                itemStarted = lastProgress
                continue
            }
            // Past the item's budget (empty results frames kept it going until then): said so.
            let spent = !gone && monotonicSeconds() >= itemStarted + itemBudget
            finishCrash(batch: batch, answered: answered, sequence: sequence, timedOut: !gone, timeout: timeout,
                        budget: spent ? itemBudget : nil)
            return
        }
        crashesInARow = 0
        reportRefusals()
    }

    /// Longest an item may be in the runner, empty results frames included: every attempt its
    /// hook deadline, every backoff between attempts at its longest (a library's Retry-After
    /// included), and the waits for answers of pending calls before it (a hook deadline each:
    /// room for a new pending call, a flush, the end of the instance).
    func itemTimeBudget(_ timeout: Double) -> Double {
        let attempts = Double(retryPolicy.maxAttempts)
        return timeout * (attempts + 2) + max(retryPolicy.maxDelay, retryPolicy.maxHintedDelay) * attempts
    }

    /// Reports each system call the jail refused this library, once (the runner notes them in
    /// the progress page as they happen).
    func reportRefusals() {
        guard let progress else { return }
        let new = progress.refusedCalls().filter { !refusalsReported.contains($0) }
        guard !new.isEmpty else { return }
        refusalsReported.formUnion(new)
        let analytics = client.withLock { $0.analytics.value }
        for number in new {
            let name = RefusedCalls.name(number)
            analytics?.report(.plugin(name: key, message: "library \(info.file) (process-isolated) called \(name), which its jail "
                + "refuses (\(RefusedCalls.purpose(name))): it failed with EPERM (reported once)"))
        }
    }

    func currentPlugins() -> IsolatedPlugins? {
        condition.lock()
        defer { condition.unlock() }
        return plugins
    }

    func isStopping() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    func isGone() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return childGone
    }

    /// The child died or hung in batch `sequence`: the item it was calling (from the progress
    /// page; else the first unanswered) is the culprit; every unanswered item goes again.
    func finishCrash(batch: [Item], answered: Int, sequence: UInt64, timedOut: Bool, timeout: Double, budget: Double? = nil) {
        guard let child else { return }
        child.kill()  // after a crash this changes nothing; a hung or silent child ends here
        let status = child.wait()
        var culprit: Item?
        var inFlight = Array(batch[answered...])
        let pluginCall = currentPlugins()?.inFlight
        if let pluginCall {
            // A timeline plugin's call was in progress: the item is not blamed, it goes again.
            crashed(status: status, during: pluginCall, culprit: nil, inFlight: inFlight, requeue: [], timedOut: false, timeout: timeout)
            return
        }
        if let progress, let index = progress.item(inBatch: sequence), index >= answered, index < batch.count {
            culprit = batch[index]
            // What it finished before: done, with the status it stored (only the text of a
            // failure is lost with the process).
            for i in answered..<index where i < ProgressPage.maxItems {
                complete(batch[i], status: progress.status(ofItem: i), message: "(its reason was lost with the process)")
            }
            inFlight = Array(batch[index...])
        } else if answered < batch.count {
            culprit = batch[answered]
        }
        culprit?.crashes += 1
        crashed(status: status, during: culprit?.label, culprit: culprit, inFlight: inFlight, requeue: [], timedOut: timedOut, timeout: timeout,
                budget: budget)
    }
}
