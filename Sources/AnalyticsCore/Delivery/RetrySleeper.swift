import Foundation

/// Waits between upload retries. Injectable so that tests can observe the waits without spending
/// them, and so that shutdown can cut a long wait (a 429 may ask for minutes) short.
package protocol RetrySleeper: Sendable {
    /// Waits `seconds`; returns false when the wait was cancelled (the caller should stop retrying
    /// and keep the batch for later).
    func sleep(seconds: Double) -> Bool
}

/// The real sleeper: a timed wait on a condition that ``cancel()`` interrupts at once.
package final class InterruptibleSleeper: RetrySleeper, @unchecked Sendable {
    private let condition = NSCondition()
    private var cancelled = false  // guarded by condition

    package init() {}

    package func sleep(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, seconds))
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if !condition.wait(until: deadline) { return !cancelled }
        }
        return false
    }

    /// Ends the current and every later wait (returning false).
    package func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// Allows waiting again after a cancel (e.g. the host resumed).
    package func reset() {
        condition.lock()
        cancelled = false
        condition.unlock()
    }

    package var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }
}
