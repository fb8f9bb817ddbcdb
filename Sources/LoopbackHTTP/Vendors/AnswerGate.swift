import Foundation

/// Holds a vendor fake's answers back on request, so a test can see what a library does while a
/// request of its own is still unanswered (a second request in flight, or none). A held request
/// waits on its connection's thread, after the fake judged it, until ``release()``.
public final class AnswerGate: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var toHold = 0
    private var holding = 0
    private var open = false

    public init() {}

    /// The next `count` answers wait until ``release()``.
    public func holdNext(_ count: Int = 1) {
        condition.lock(); toHold += count; open = false; condition.unlock()
    }

    /// Lets every held answer go (and the ones still to be held).
    public func release() {
        condition.lock(); open = true; toHold = 0; condition.broadcast(); condition.unlock()
    }

    /// Answers waiting right now.
    public var held: Int { condition.lock(); defer { condition.unlock() }; return holding }

    /// Waits until `count` answers are held, or the deadline passes.
    public func waitUntilHeld(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while holding < count { if !condition.wait(until: deadline) { return holding >= count } }
        return true
    }

    /// Called by the fake before it answers: waits when this answer is to be held.
    func pass() {
        condition.lock(); defer { condition.unlock() }
        guard toHold > 0, !open else { return }
        toHold -= 1
        holding += 1
        condition.broadcast()
        while !open { condition.wait() }
        holding -= 1
    }
}
