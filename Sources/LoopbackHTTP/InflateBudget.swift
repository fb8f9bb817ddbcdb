import Foundation

/// Memory the server may spend on inflated (gunzipped) request bodies at once, shared by every
/// connection: a request reserves its largest possible inflated size before inflating and gives
/// it back once answered, so that many concurrent gzip bombs cost at most the budget, not their
/// number times the per-request limit. A request that finds the budget spent waits a little for
/// others to finish, then is answered 503 (the client retries).
final class InflateBudget: @unchecked Sendable {
    let total: Int
    private let condition = NSCondition()
    private var available: Int  // guarded by condition

    init(total: Int) {
        self.total = max(0, total)
        self.available = self.total
    }

    /// Takes `bytes` of the budget, waiting up to `timeout` seconds for them; false when they
    /// did not free up in time, or can never fit.
    func reserve(_ bytes: Int, timeout: Double) -> Bool {
        guard bytes <= total else { return false }
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while available < bytes {
            if !condition.wait(until: deadline) && available < bytes { return false }
        }
        available -= bytes
        return true
    }

    func release(_ bytes: Int) {
        condition.lock()
        available = min(total, available + bytes)
        condition.broadcast()
        condition.unlock()
    }

    /// Bytes not reserved right now.
    var free: Int {
        condition.lock()
        defer { condition.unlock() }
        return available
    }
}
