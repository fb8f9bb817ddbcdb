import Foundation
import Synchronization

/// The calls of one instance that answered "pending" (`AH_EXT_FINISH_LATER`, ABI 1.3), between
/// the library's threads (which complete them) and the thread that calls the hooks (which owns
/// the events behind them and acts on the answers).
///
/// A token goes through: taken (handed out inside a hook), parked (the hook answered pending; a
/// deadline runs), completed (the answer waits for the owner), then gone. Tokens grow with the
/// calls, so answers handed over in token order keep the events' order. A completion that finds
/// no taken or parked token (unknown, twice, abandoned, after the end) changes nothing and is
/// reported once per kind of mistake.
///
/// When a parked call expires: once the timeout passed since it was parked *and* since the
/// library last completed any call. A library that holds many calls to gather them (GA4 groups a
/// user's events across 25,000 held calls) answers them a request at a time: while answers keep
/// coming it is working through what it holds, and a call still queued behind the others is not
/// hung. A library that answers nothing for the timeout is, and its expired calls go as before.
final class PendingCalls: Sendable {
    /// Enough for a library that gathers each user's events (GA4: up to 25 per request) over a
    /// thousand users interleaved; the host's memory for them is the events' own.
    static let defaultMaxPending = 25_000

    let maxPending: Int
    private let log: @Sendable (NativeLogLevel, String) -> Void

    private struct State {
        var next: UInt64 = 1
        /// The token of the hook in progress (0: none taken yet), while `armed`.
        var armed = false
        var current: UInt64 = 0
        /// Taken or parked tokens: the deadline once parked (nil while taken).
        var open: [UInt64: Double?] = [:]
        /// Parked tokens with their deadline, in the order they were parked (deadlines grow along
        /// it); entries from `parkedHead` on, those no longer open skipped lazily.
        var parkedOrder: [(token: UInt64, deadline: Double)] = []
        var parkedHead = 0
        /// When the library last completed a call (monotonic seconds; 0: never), and the timeout
        /// the calls were parked with.
        var lastAnswer = 0.0
        var timeout = 0.0
        var completed: [(UInt64, NativeHookResult)] = []
        var ended = false
        var reported: Set<String> = []
        /// Refused completions not yet told to the library (`AH_EXT_NOTICES`), bounded.
        var refusals: [String] = []
        var wakePosted = false
        /// When the expiry wake-up is due (nil: none scheduled).
        var expiryWake: Double?
    }
    private let state = Locked(State())
    private let arrived = NSCondition()
    /// Called (outside any lock) when an answer arrives and the owner may be idle.
    private let wake = CallbackSlot()

    /// Set when the library looked up `AH_EXT_FINISH_LATER`: only then may its hooks pend, and
    /// only then do event calls pay for arming a token.
    private let used = Atomic<Bool>(false)
    var isUsed: Bool { used.load(ordering: .relaxed) }
    func markUsed() { used.store(true, ordering: .relaxed) }

    init(maxPending: Int = PendingCalls.defaultMaxPending, log: @escaping @Sendable (NativeLogLevel, String) -> Void) {
        self.maxPending = maxPending
        self.log = log
    }

    func onArrival(_ wake: @escaping @Sendable () -> Void) { self.wake.set(wake) }

    // MARK: The library's side

    /// `token()`: the token of the hook in progress, made on first request; 0 outside a hook.
    func token() -> UInt64 {
        state.withLock { s in
            guard s.armed, !s.ended else { return 0 }
            if s.current == 0 {
                s.current = s.next
                s.next += 1
                s.open[s.current] = .some(nil)
            }
            return s.current
        }
    }

    /// `complete()`: false (and a report) when the token is not open.
    func complete(_ token: UInt64, _ result: NativeHookResult) -> Bool {
        let outcome = state.withLock { s -> (Bool, String?, Bool) in
            if s.ended {
                return (false, s.reported.insert("ended").inserted ? "completed token \(token) after its instance ended; ignored" : nil, false)
            }
            guard s.open.removeValue(forKey: token) != nil else {
                let why = token == 0 || token >= s.next ? "an unknown token \(token)" : "token \(token), which is not pending (completed twice, void, or abandoned after the hook timeout)"
                if s.refusals.count < 100 { s.refusals.append("completed \(why); ignored") }
                return (false, s.reported.insert(token == 0 || token >= s.next ? "unknown" : "stale").inserted ? "completed \(why); ignored" : nil, false)
            }
            s.completed.append((token, result))
            s.lastAnswer = monotonicSeconds()
            let post = !s.wakePosted
            s.wakePosted = true
            return (true, nil, post)
        }
        if let message = outcome.1 { log(.error, "\(message) (a library bug; later ones of this kind are not reported)") }
        if outcome.0 {
            arrived.lock()
            arrived.broadcast()
            arrived.unlock()
            if outcome.2 { wake() }
        }
        return outcome.0
    }

    // MARK: The owner's side (the thread that calls the hooks)

    /// Before an event hook: `token()` may hand one out until `takeCall`.
    func arm() { state.withLock { $0.armed = true; $0.current = 0 } }

    /// After the hook: the token it took (0: none); no more are handed out.
    func takeCall() -> UInt64 {
        state.withLock { s in
            s.armed = false
            defer { s.current = 0 }
            return s.current
        }
    }

    /// The hook answered pending with `token`: its deadline starts now, and the owner is woken
    /// when the earliest parked call may expire (``scheduleExpiryWake()``, in the same lock).
    func park(_ token: UInt64, timeout: Double) {
        let due = state.withLock { s -> Double? in
            guard s.open[token] != nil else { return nil }
            let deadline = monotonicSeconds() + timeout
            s.open[token] = .some(deadline)
            s.timeout = timeout
            s.parkedOrder.append((token, deadline))
            if s.parkedHead > 1024, s.parkedHead * 2 > s.parkedOrder.count {
                s.parkedOrder.removeFirst(s.parkedHead)
                s.parkedHead = 0
            } else if s.parkedOrder.count - s.parkedHead > 2 * s.open.count + 1024 {
                // A call that stays open while later ones are answered keeps the answered ones
                // behind it: dropped here, so the list stays the size of what is parked.
                s.parkedOrder = s.parkedOrder[s.parkedHead...].filter { s.open[$0.token] == .some(.some($0.deadline)) }
                s.parkedHead = 0
            }
            return Self.claimExpiryWake(&s)
        }
        if let due { armExpiryWake(due) }
    }

    /// Makes sure the owner is woken when the earliest parked call expires, even if nothing else
    /// happens by then (an idle worker must still abandon, count and report it in time).
    func scheduleExpiryWake() {
        if let due = state.withLock({ Self.claimExpiryWake(&$0) }) { armExpiryWake(due) }
    }

    /// When a wake-up is to be armed (nil: one is armed already, or nothing is parked).
    private static func claimExpiryWake(_ s: inout State) -> Double? {
        // Deadlines only grow, so a wake-up already scheduled comes no later than needed (one
        // that comes early finds nothing expired and schedules the next).
        if s.expiryWake != nil { return nil }
        guard let earliest = earliestExpiry(&s) else { return nil }
        s.expiryWake = earliest
        return earliest
    }

    private func armExpiryWake(_ due: Double) {
        // Also in a jailed runner: not the global pool (SideQueue says why).
        SideQueue.async("pending-call expiry", after: max(0, due - monotonicSeconds()) + 0.005) { [self] in
            let fire = state.withLock { s -> Bool in
                guard s.expiryWake == due else { return false }
                s.expiryWake = nil
                return true
            }
            if fire { wake() }
        }
    }

    /// The hook took `token` but answered at once: the token is void (a completion already given
    /// for it is dropped; true when there was one, a library bug worth a report).
    @discardableResult
    func void(_ token: UInt64) -> Bool {
        state.withLock { s in
            s.open.removeValue(forKey: token)
            let before = s.completed.count
            s.completed.removeAll { $0.0 == token }
            return s.completed.count != before
        }
    }

    /// What the owner acts on, in one lock (it asks before every event hook): the calls past
    /// their deadline (``expire(now:)``), the refusals (``takeRefusals()``) and the answers that
    /// arrived, oldest call first (``drain()``); and the expiry wake-up armed again if due
    /// (``scheduleExpiryWake()``).
    func collect(now: Double = monotonicSeconds()) -> (late: [UInt64], refusals: [String], answers: [(UInt64, NativeHookResult)]) {
        let (late, refusals, answers, due) = state.withLock { s -> ([UInt64], [String], [(UInt64, NativeHookResult)], Double?) in
            let late = Self.expired(&s, now: now)
            let refusals = s.refusals
            if !refusals.isEmpty { s.refusals.removeAll() }
            s.wakePosted = false
            let due = Self.claimExpiryWake(&s)
            guard !s.completed.isEmpty else { return (late, refusals, [], due) }
            defer { s.completed.removeAll(keepingCapacity: true) }
            return (late, refusals, s.completed.count == 1 ? s.completed : s.completed.sorted { $0.0 < $1.0 }, due)
        }
        if let due { armExpiryWake(due) }
        return (late, refusals, answers)
    }

    /// Answers that arrived, oldest call first.
    func drain() -> [(UInt64, NativeHookResult)] {
        state.withLock { s in
            s.wakePosted = false
            defer { s.completed.removeAll() }
            return s.completed.sorted { $0.0 < $1.0 }
        }
    }

    /// Parked tokens past their deadline with no answer from the library for as long, now gone (a
    /// later completion is a reported no-op), oldest first. Costs nothing while none is due.
    func expire(now: Double = monotonicSeconds()) -> [UInt64] {
        state.withLock { Self.expired(&$0, now: now) }
    }

    private static func expired(_ s: inout State, now: Double) -> [UInt64] {
        guard let earliest = earliestExpiry(&s), earliest <= now else { return [] }
        var late: [UInt64] = []
        while s.parkedHead < s.parkedOrder.count {
            let (token, deadline) = s.parkedOrder[s.parkedHead]
            if s.open[token] == .some(.some(deadline)) {
                guard deadline <= now else { break }
                s.open.removeValue(forKey: token)
                late.append(token)
            }
            s.parkedHead += 1
        }
        return late
    }

    /// When the first parked call expires (nil: none parked): its deadline, or later while the
    /// library answered within the timeout. Drops answered calls from the front of the order.
    private static func earliestExpiry(_ s: inout State) -> Double? {
        while s.parkedHead < s.parkedOrder.count {
            let (token, deadline) = s.parkedOrder[s.parkedHead]
            if s.open[token] == .some(.some(deadline)) { return max(deadline, s.lastAnswer + s.timeout) }
            s.parkedHead += 1
        }
        s.parkedOrder.removeAll(keepingCapacity: true)
        s.parkedHead = 0
        return nil
    }

    /// Refused completions since the last call, for the library's notices.
    func takeRefusals() -> [String] {
        state.withLock { s in defer { s.refusals.removeAll() }; return s.refusals }
    }

    /// Calls still waiting for their answer (answers not yet drained do not count).
    var openCount: Int { state.withLock { $0.open.count } }

    /// Waits until an answer arrives or `deadline` (monotonic seconds) passes; at the latest until
    /// the earliest parked deadline, so that expiry is noticed.
    func waitForArrival(until deadline: Double) {
        let earliest = state.withLock { s -> Double? in
            if !s.completed.isEmpty { return nil }
            return Self.earliestExpiry(&s) ?? deadline
        }
        guard let earliest else { return }
        let until = min(deadline, earliest)
        arrived.lock()
        defer { arrived.unlock() }
        while state.withLock({ $0.completed.isEmpty }) {
            let left = until - monotonicSeconds()
            if left <= 0 { return }
            _ = arrived.wait(until: Date(timeIntervalSinceNow: left))
        }
    }

    /// The instance ends: every later completion is a reported no-op. Returns the calls still open.
    func end() -> [UInt64] {
        state.withLock { s in
            s.ended = true
            s.armed = false
            defer { s.open.removeAll(); s.completed.removeAll(); s.parkedOrder.removeAll(); s.parkedHead = 0 }
            return s.open.keys.sorted()
        }
    }
}
