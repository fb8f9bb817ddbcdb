import CAnalyticsABI
import Foundation

/// An event whose hook answered pending in the runner: its operation, its bytes (copied: the
/// batch that brought them is gone when the answer comes) and the attempt that answered.
struct RunnerParkedEvent {
    let op: IsolationWire.Op
    let bytes: [UInt8]
    let attempt: Int
    /// Its serial, told to the host once its answer is final (the host's durable queue).
    let serial: UInt64
}

/// ABI 1.3 `AH_EXT_FINISH_LATER` inside `analytics-plugin-runner`, with the rules of the
/// in-process destination: the item's result says `pending` (the host counts the event as
/// handed over and goes on), the runner keeps the event, calls it again on a retryable answer
/// (one backoff per round, first-arrival order), waits at the bound, at a flush and before
/// `destroy`, abandons what passes the host's hook timeout, and tells the host only the final
/// outcomes that are not OK (`settled` frames: failed, or abandoned).
extension PluginRunner.Server {
    static let settleMarker: UInt8 = 0
    /// What `call` answers for an event it parked: not a status any library can return (a
    /// library that took no token and answers 3 gets "unknown status", as in-process).
    static let parkedStatus = ah_status(Int32.min)

    /// Wakes the main thread to act on answers when no batch runs.
    func postSettle() {
        work.withLock { $0.append([Self.settleMarker]) }
        available.signal()
    }

    typealias PendingEventHook = @convention(c) (OpaquePointer, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int) -> ah_status

    /// An event hook of a library that may finish later.
    func callAllowingPending(_ hook: PendingEventHook, _ instance: OpaquePointer, _ op: IsolationWire.Op,
                             _ text: UnsafePointer<CChar>, _ length: Int, _ pending: PendingCalls) -> (ah_status, String) {
        pending.arm()
        errorBuffer.clear()
        let status = hook(instance, text, length, errorBuffer.base, errorBuffer.capacity)
        let token = pending.takeCall()
        if status == ah_status(AH_PENDING) {
            guard token != 0 else { return (ah_status(AH_ERR_PERMANENT), "\(op.hookName) answered AH_PENDING without taking a completion token") }
            let serial = redeliverySerial ?? nextSerial
            if redeliverySerial == nil { nextSerial += 1 }
            parked[token] = RunnerParkedEvent(op: op, bytes: [UInt8](UnsafeRawBufferPointer(start: text, count: length)),
                                              attempt: currentAttempt, serial: serial)
            pending.park(token, timeout: hookTimeout)  // arms the expiry wake-up too
            return (Self.parkedStatus, "")
        }
        if token != 0, pending.void(token) {
            out.frame(.call) { w in
                w.u32(0); w.u8(IsolationWire.Function.log.rawValue); w.i64(Int64(NativeLogLevel.error.rawValue))
                w.text("\(op.hookName) completed token \(token) but answered \(status) itself; the completion was ignored (a library bug)")
            }
        }
        if status == ah_status(AH_OK) { return (status, "") }
        let message = errorBuffer.message
        return (status, message.isEmpty ? "\(op.hookName) failed without a reason" : message)
    }

    /// Acts on the answers that arrived and on calls past their deadline.
    func settleParked(beat: () -> Void) {
        guard let pending = table?.pendingCalls else { return }
        var retries: [RunnerParkedEvent] = []
        let (late, refusals, answers) = pending.collect()
        if !late.isEmpty {
            // As in-process: a durable destination's late calls are answered retryable, and once
            // their attempts are spent stay on its queue (not told as answered).
            let reason = "no answer within \(hookTimeout) s"
            if durable {
                var kept: [UInt64] = []
                for token in late {
                    guard let p = parked[token] else { continue }
                    if p.attempt < retryPolicy.maxAttempts { retries.append(parked.removeValue(forKey: token)!) } else { kept.append(token) }
                }
                abandon(kept, reason: reason + " after \(retryPolicy.maxAttempts) attempts; kept on the durable queue for the next run", final: false)
                if !retries.isEmpty {
                    out.frame(.call) { w in
                        w.u32(0); w.u8(IsolationWire.Function.log.rawValue); w.i64(Int64(NativeLogLevel.warn.rawValue))
                        w.text("\(retries.count) call\(retries.count == 1 ? "" : "s") answered pending, then \(reason); called again (on the durable queue until answered)")
                    }
                }
            } else {
                abandon(late, reason: reason, final: true)
            }
        }
        if let instance, let notices = library.notices {
            for refusal in refusals { notices.tell(instance, Int32(AH_NOTICE_REFUSED), refusal) }
        }
        for (token, result) in answers {
            guard let p = parked.removeValue(forKey: token) else { continue }
            switch result {
            case .ok: answeredSerials.append(p.serial)
            case .retryable where p.attempt < retryPolicy.maxAttempts: retries.append(p)
            case .retryable(let m):
                answeredSerials.append(p.serial)
                settled(failed: "\(p.op.hookName) failed after \(p.attempt) attempt\(p.attempt == 1 ? "" : "s"): \(m)")
            case .permanent(let m):
                answeredSerials.append(p.serial)
                settled(failed: "\(p.op.hookName) failed: \(m)")
            }
        }
        if !retries.isEmpty {
            beat()
            sleepBeating(retryPolicy.delay(afterAttempt: retries.map(\.attempt).min()!, hint: table?.retryHint), beat: beat)
            for p in retries { redeliver(p, beat: beat) }
        }
        tellAnswered()
    }

    /// Tells the host which pending calls have their final answer.
    func tellAnswered() {
        guard !answeredSerials.isEmpty else { return }
        let serials = answeredSerials
        answeredSerials.removeAll()
        out.frame(.completed) { w in
            w.u32(UInt32(serials.count))
            for s in serials { w.i64(Int64(bitPattern: s)) }
        }
    }

    /// Calls a parked event's hook again until it answers or parks it.
    private func redeliver(_ p: RunnerParkedEvent, beat: () -> Void) {
        var attempt = p.attempt + 1
        while true {
            currentAttempt = attempt
            redeliverySerial = p.serial
            let (status, message) = p.bytes.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { call(p.op, $0.baseAddress!, $0.count) }
            }
            redeliverySerial = nil
            if status != Self.parkedStatus && !(status == ah_status(AH_ERR_RETRYABLE) && attempt < retryPolicy.maxAttempts) {
                answeredSerials.append(p.serial)
            }
            switch status {
            case ah_status(AH_OK), Self.parkedStatus: return
            case ah_status(AH_ERR_RETRYABLE) where attempt < retryPolicy.maxAttempts:
                beat()
                sleepBeating(retryPolicy.delay(afterAttempt: attempt, hint: table?.retryHint), beat: beat)
                attempt += 1
            case ah_status(AH_ERR_RETRYABLE):
                settled(failed: "\(p.op.hookName) failed after \(attempt) attempt\(attempt == 1 ? "" : "s"): \(message)")
                return
            default:
                settled(failed: "\(p.op.hookName) failed: \(message)")
                return
            }
        }
    }

    /// Sleeps `seconds` (a Retry-After may be long) in slices, telling the host it is alive.
    func sleepBeating(_ seconds: Double, beat: () -> Void) {
        let end = monotonicSeconds() + seconds
        while true {
            let left = end - monotonicSeconds()
            if left <= 0 { return }
            Thread.sleep(forTimeInterval: min(left, 1))
            if left > 1 { beat() }
        }
    }

    /// Waits (telling the host it is alive) while the instance has as many pending calls as allowed.
    func waitForPendingRoom(beat: () -> Void) {
        guard let pending = table?.pendingCalls else { return }
        while parked.count >= pending.maxPending {
            beat()
            pending.waitForArrival(until: monotonicSeconds() + 0.25)
            settleParked(beat: beat)
        }
    }

    /// Waits for the answers of every parked event until `deadline`.
    func settlePending(until deadline: Double, beat: () -> Void) {
        guard let pending = table?.pendingCalls else { return }
        settleParked(beat: beat)
        while !parked.isEmpty, monotonicSeconds() < deadline {
            beat()
            pending.waitForArrival(until: min(deadline, monotonicSeconds() + 0.25))
            settleParked(beat: beat)
        }
    }

    /// Before `destroy`: waits for the answers (within the budget), abandons the rest.
    func endParked(beat: () -> Void) {
        settlePending(until: monotonicSeconds() + hookTimeout * 0.8, beat: beat)
        abandon(parked.keys.sorted(), reason: "no answer before the instance ended", final: false)
        tellAnswered()
    }

    /// `final`: past the hook timeout, the events' answer is final (told to the host); at the
    /// instance's end they are not (a durable destination keeps them for the next run).
    private func abandon(_ tokens: [UInt64], reason: String, final: Bool) {
        var names: [String] = []
        for token in tokens {
            guard let p = parked.removeValue(forKey: token) else { continue }
            names.append(p.op.hookName)
            if final { answeredSerials.append(p.serial) }
        }
        guard !names.isEmpty else { return }
        let what = names.count == 1 ? "1 call (\(names[0]))" : "\(names.count) calls (\(Set(names).sorted().joined(separator: ", ")))"
        let text = "\(what) answered pending, then \(reason); abandoned (counted as abandoned)"
        out.frame(.settled) { w in
            w.u8(IsolationWire.settledAbandoned)
            w.u32(UInt32(names.count))
            w.text(text)
        }
        if let instance, let notices = library.notices { notices.tell(instance, Int32(AH_NOTICE_ABANDONED), text) }
    }

    private func settled(failed report: String) {
        out.frame(.settled) { w in
            w.u8(IsolationWire.settledFailed)
            w.u32(1)
            w.text(report)
        }
    }
}

/// ABI 1.3 `AH_EXT_BATCH` inside the runner: consecutive events of one of the host's batches go
/// to the library in calls of at most its size; retryable answers are retried in place (in order,
/// with backoff, the host told that the wait is not the library's time), as in-process.
extension PluginRunner.Server {
    func deliverGathered(_ events: [[UInt8]], _ batch: NativeBatchTable, beat: () -> Void) -> [(ah_status, String)] {
        guard let instance else { return events.map { _ in (ah_status(AH_ERR_PERMANENT), "the instance was not created") } }
        var answers = [(ah_status, String)](repeating: (ah_status(AH_OK), ""), count: events.count)
        var open = Array(events.indices)
        var attempt = 1
        while !open.isEmpty {
            let results = batch.call(instance, open.map { events[$0] }, errorBuffer: errorBuffer, scratch: batchScratch)
            var again: [Int] = []
            for (i, result) in zip(open, results) {
                switch result {
                case .ok: answers[i] = (ah_status(AH_OK), "")
                case .retryable(let m):
                    answers[i] = (ah_status(AH_ERR_RETRYABLE), m)
                    if attempt < retryPolicy.maxAttempts { again.append(i) }
                case .permanent(let m): answers[i] = (ah_status(AH_ERR_PERMANENT), m)
                }
            }
            guard !again.isEmpty else { break }
            beat()
            sleepBeating(retryPolicy.delay(afterAttempt: attempt, hint: table?.retryHint), beat: beat)
            attempt += 1
            open = again
        }
        return answers
    }
}
