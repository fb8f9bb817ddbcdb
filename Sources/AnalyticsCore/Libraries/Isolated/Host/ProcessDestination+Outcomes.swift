import CAnalyticsABI
import Foundation
import Glibc

extension ProcessDestination {
    // MARK: Outcomes

    /// An item's answer from the library.
    func complete(_ item: Item, status: UInt8, message: String) {
        if item.replay { return }
        switch status {
        case IsolationWire.ok:
            finish(item)
            item.done?.signal()
        case IsolationWire.pending:
            awaitAnswer(item)
            item.done?.signal()
        default:
            // The runner retried a retryable failure in place, per `retryPolicy`, before answering.
            let what = item.callName
            let attempts = retryPolicy.maxAttempts
            let text = item.op == .application ? applicationFailure(what, retryable: status == IsolationWire.retryable, message)
                : status == IsolationWire.retryable
                ? "\(what) failed after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(message)"
                : "\(what) failed: \(message)"
            fail(item, report: text)
        }
    }

    /// An application event's failure, never retried, in the words the in-process instance of the
    /// same role uses (`NativeDestination`, `NativeUtilityLibrary`).
    func applicationFailure(_ what: String, retryable: Bool, _ message: String) -> String {
        if info.isDestination { return "\(what) failed (not retried): \(message)" }
        return retryable ? "\(what) failed (retryable, not retried): \(message)" : "\(what) failed: \(message)"
    }

    func requeueFront(_ items: [Item]) {
        guard !items.isEmpty else { return }
        condition.lock()
        if outboxHead >= items.count {
            outboxHead -= items.count
            for (i, item) in items.enumerated() { outbox[outboxHead + i] = item }
        } else {
            outbox.replaceSubrange(0..<outboxHead, with: items)
            outboxHead = 0
        }
        condition.broadcast()
        condition.unlock()
    }

    /// The final outcome of events that answered pending and did not end OK (ABI 1.3), counted
    /// as the in-process destination counts them. The reader checked it against the pending
    /// results the process gave (`unsettled`).
    func settled(_ frame: RunnerFrames.Settled) {
        let count = Int(frame.count)
        let (analytics, stats) = client.withLock { ($0.analytics.value, $0.stats) }
        if frame.abandoned {
            stats?._delivered.wrappingSubtract(count, ordering: .relaxed)
            stats?._abandoned.wrappingAdd(count, ordering: .relaxed)
        } else {
            stats?.recordFailure(count)
        }
        analytics?.report(.plugin(name: key, message: frame.text))
    }

    /// The item's answer is final: a durable queue may cross its event off.
    func finish(_ item: Item) {
        guard let ticket = item.ticket else { return }
        completions.withLock { $0 }?.finish(ticket)
    }

    /// The item answered `pending`: it gets the next serial; its answer may have come already.
    func awaitAnswer(_ item: Item) {
        condition.lock()
        let serial = nextSerial
        nextSerial += 1
        let early = answeredEarly.remove(serial) != nil
        if !early && item.ticket != nil { awaitingAnswers[serial] = item }
        condition.unlock()
        if early { finish(item) }
    }

    /// A `completed` frame of `process`: these pending calls have their final answer. A frame
    /// read after that process ended names serials of its own, not the next process's: ignored.
    func answered(_ serials: [UInt64], by process: IsolatedProcess) {
        var done: [Item] = []
        condition.lock()
        guard currentChild === process else { condition.unlock(); return }
        for serial in serials {
            if let item = awaitingAnswers.removeValue(forKey: serial) { done.append(item) } else if serial >= nextSerial { answeredEarly.insert(serial) }
        }
        condition.unlock()
        for item in done { finish(item) }
    }

    /// Counts an event failed and reports why.
    func fail(_ item: Item, report text: String?) {
        finish(item)
        let (analytics, stats) = client.withLock { ($0.analytics.value, $0.stats) }
        if item.event != nil { stats?.recordFailure() }
        if let text { analytics?.report(.plugin(name: key, message: text)) }
        item.done?.signal()
    }

    /// An item that will never reach the library (disabled, or stopped): counted, not reported
    /// one by one (the reason was reported once).
    func giveUp(_ item: Item, counted: Bool) {
        if item.replay { return }
        if item.ticket != nil {
            condition.lock()
            let keep = keepsHeldOnDisk
            condition.unlock()
            if keep { item.done?.signal(); return }
        }
        fail(item, report: nil)
    }

    /// The runner's memory limit: the library's cgroup (made at its first start) where the host
    /// may make one and `memoryLimit` allows it, else RLIMIT_AS.
    func memoryLimitArguments() -> [String] {
        guard limits.memoryLimitBytes > 0 else { return [] }
        if limits.memoryLimit == .automatic && !cgroupTried {
            cgroupTried = true
            cgroup = IsolatedCgroup.make(limitBytes: limits.memoryLimitBytes).cgroup
        }
        if let cgroup { return ["--cgroup", cgroup.path] }
        return ["--memory-limit", String(limits.memoryLimitBytes)]
    }

    /// How the runner ended, with what its memory limit had to do with it.
    func describeEnd(status: Int32, during: String?) -> String {
        let text = IsolatedProcess.describe(status: status)
        if status & 0x7f == SIGKILL, let cgroup, cgroup.consumeOOMKill() {
            return "was stopped by its memory limit (\(cgroup.limitBytes) bytes, memory cgroup \(cgroup.path)): it \(text)"
        }
        if cgroup == nil, limits.memoryLimitBytes > 0, during == "loading the library" || during == "creating the instance" {
            return text + " (its address space is limited to \(limits.memoryLimitBytes) bytes, RLIMIT_AS: a library that "
                + "reserves more at start, as JavaScriptCore does (about 6 GiB), needs a higher --isolate-memory, 0, or a "
                + "memory cgroup the host may make)"
        }
        return text
    }

    /// `budget`: set when a call that sent empty results frames ran out of its item's budget
    /// (the frames move the hook deadline on only within it).
    func crashed(status: Int32, during: String?, culprit: Item?, inFlight: [Item], requeue: [Item], timedOut: Bool, timeout: Double,
                 budget: Double? = nil) {
        endChild()
        let now = monotonicSeconds()
        crashTimes = crashTimes.filter { now - $0 < limits.crashWindow } + [now]
        crashesInARow += 1
        // Events the dead process held pending go first (they came before the batch in flight).
        condition.lock()
        let strandedItems = stranded
        stranded = []
        condition.unlock()
        var again = strandedItems + inFlight.filter { !$0.replay }
        var givenUp: Item?
        if let culprit, !culprit.replay, culprit.crashes >= limits.maxAttempts {
            givenUp = culprit
            again.removeAll { $0 === culprit }
        }
        let events = again.filter { $0.event != nil }.count
        client.withLock { $0.stats }?._retried.wrappingAdd(events, ordering: .relaxed)
        condition.lock()
        let refusedFrame = protocolError
        protocolError = nil
        condition.unlock()
        let what = if let refusedFrame {
            "sent the host a malformed frame (\(refusedFrame)) and was ended"
        } else if timedOut, let budget {
            "did not answer within \(String(format: "%.1f", budget)) s of the call, its item's budget (the empty results frames it sent "
                + "meanwhile move the \(timeout) s hook deadline on only within it), and was killed"
        } else if timedOut {
            "did not answer within \(timeout) s and was killed"
        } else {
            describeEnd(status: status, during: during)
        }
        var text = "library \(info.file) (process-isolated) \(what) while \(during ?? "idle")"
        let willDisable = crashTimes.count >= limits.maxCrashes
        if let givenUp {
            text += "; it ended the process \(givenUp.crashes) time\(givenUp.crashes == 1 ? "" : "s") and is counted failed"
        }
        let delay = min(limits.maxRestartDelay, limits.restartDelay * pow(2, Double(max(0, crashesInARow - 1))))
        if willDisable {
            text += "; \(crashTimes.count) crashes within \(limits.crashWindow) s: disabled, its events are counted failed from now on"
        } else {
            if events > 0 { text += "; \(events) event\(events == 1 ? "" : "s") in flight will be sent again" }
            text += "; restarting in \(delay) s"
        }
        client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: text))
        if let givenUp { fail(givenUp, report: nil) }
        if willDisable {
            disable(nil)
            for item in again + requeue { giveUp(item, counted: true) }
            return
        }
        requeueFront(again + requeue)
        Thread.sleep(forTimeInterval: delay)
    }

    /// Stops sending to the library; what is queued is counted failed.
    func disable(_ reason: String?) {
        condition.lock()
        let first = disabled == nil
        if first { disabled = reason ?? "crashed too often" }
        let left = Array(outbox[outboxHead...])
        outbox.removeAll()
        outboxHead = 0
        condition.broadcast()
        condition.unlock()
        if first, let reason { client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: reason)) }
        for item in left { giveUp(item, counted: true) }
    }

    func endChild() {
        guard let process = child else { return }
        reportRefusals()
        child = nil
        condition.lock()
        if currentChild === process { currentChild = nil }
        // Pending calls end with the process: after a crash they go to the next one (`crashed`);
        // at the end their events stay on disk for the next run.
        stranded = awaitingAnswers.sorted { $0.key < $1.key }.map(\.value)
        awaitingAnswers = [:]
        answeredEarly = []
        nextSerial = 0
        let plugins = self.plugins
        let signals = self.signals
        self.plugins = nil
        self.signals = nil
        condition.unlock()
        signals?.end()
        // Its timeline plugins leave the timeline; calls in progress fail (reported per plugin).
        plugins?.end("its process ended (the library's report says why)")
        // Its last answer (destroy's, or the crash) is in: nothing of the library runs any more
        // that the host waits for.
        process.closeChannel()
        process.kill()
        process.wait()
        // Nothing of the library outlives its process.
        pidsCgroup?.killAll()
    }
}
