import Foundation
import Synchronization

/// What the analytics-swift surface keeps per client: the `enabled` switch, the start-up latch of
/// `waitUntilStarted()`, the referrer from `openURL`, and whether start-up finished.
final class ClientCompatibilityState: Sendable {
    /// `Analytics.enabled`: read on every call, so an atomic rather than a lock.
    let enabled = Atomic<Bool>(true)
    /// The last URL the application was opened with (`context.referrer.url` of later events).
    let referrer = Locked<String?>(nil)
    private let started = Locked(false)
    private let startedCondition = NSCondition()

    /// Start-up is over: the settings the client starts with are in force.
    func markStarted() {
        startedCondition.lock()
        started.withLock { $0 = true }
        startedCondition.broadcast()
        startedCondition.unlock()
    }

    var isStarted: Bool { started.withLock { $0 } }

    /// Waits until ``markStarted()`` ran, at most `timeout` seconds. Returns whether it did.
    func waitUntilStarted(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        startedCondition.lock()
        defer { startedCondition.unlock() }
        while !isStarted {
            if !startedCondition.wait(until: deadline) { return isStarted }
        }
        return true
    }
}
