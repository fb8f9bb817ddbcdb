import Foundation

/// Saves the user state off the caller's path. `identify`, `alias`, `reset` only hand the new
/// state over (a lock and an assignment); a background queue writes the latest one at most every
/// `delay` seconds, so a burst of identifies costs one write. `flush()` and `shutdown()` write
/// at once and wait. Each write is crash-safe (see ``UserStore/save(_:)``): after a crash the
/// file holds a whole earlier or later state, never a torn one; at most the changes of the last
/// `delay` seconds before a crash are not on disk (the events themselves carry the ids).
final class UserStateWriter: Sendable {
    private struct Pending {
        /// The newest state not yet written.
        var latest: UserState?
        /// A background write is queued.
        var scheduled = false
    }

    private let store: UserStore
    private let delay: Double
    private let report: @Sendable (AnalyticsError) -> Void
    private let pending = Locked(Pending())
    /// Serial: writes happen in the order of the states they save.
    private let queue = DispatchQueue(label: "analytics-host.user-state")
    private let writeCount = Locked(0)
    /// Files written so far (the coalescing is observable in tests).
    var writes: Int { writeCount.withLock { $0 } }

    init(store: UserStore, delay: Double = 0.1, report: @escaping @Sendable (AnalyticsError) -> Void) {
        self.store = store
        self.delay = delay
        self.report = report
    }

    /// Records `state` as the one to save; returns at once.
    func changed(_ state: UserState) {
        let schedule = pending.withLock { p -> Bool in
            p.latest = state
            if p.scheduled { return false }
            p.scheduled = true
            return true
        }
        if schedule { queue.asyncAfter(deadline: .now() + delay) { [self] in writeLatest() } }
    }

    /// Writes the latest unsaved state now and returns when it is on disk.
    func flush() { queue.sync { writeLatest() } }

    private func writeLatest() {
        let state = pending.withLock { p -> UserState? in
            defer { p.latest = nil; p.scheduled = false }
            return p.latest
        }
        guard let state else { return }
        do { try store.save(state) } catch { report(.storage("cannot save user state: \(error)")) }
        writeCount.withLock { $0 += 1 }
    }
}
