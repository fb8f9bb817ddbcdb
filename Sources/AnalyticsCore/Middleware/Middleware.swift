import Foundation

/// Block middleware, as in analytics-ios: look at the context, then call `next` with it (or a
/// modified copy) to let it through. Not calling `next` drops the call — for a destination
/// middleware, for that destination only.
///
/// analytics-ios's middleware is asynchronous: `next` may be called later, from another thread.
/// Here a middleware says so by calling `next.later()` before it returns; it must then call
/// `next` (or `next.drop()`) exactly once, from any thread, within the client's
/// `middlewareTimeout` (default: `hookTimeout`). Past it the event is dropped and reported. A
/// middleware that returns without calling `next` or `later()` drops the call at that moment; if
/// it calls `next` afterwards anyway (analytics-ios code written without `later()`), the event
/// goes on as in analytics-ios — out of order, without a deadline, counted in
/// ``MiddlewarePlugin/unorderedAnswers``.
public typealias Middleware = @Sendable (_ context: MiddlewareContext, _ next: MiddlewareNext) -> Void

/// Builds a middleware from a closure; reads like analytics-ios's `BlockMiddleware`.
public func BlockMiddleware(_ block: @escaping Middleware) -> Middleware { block }

/// What a middleware calls to pass the call on. A value that may be kept and called from any
/// thread once the middleware said `later()`; a second call is a reported no-op.
public struct MiddlewareNext: Sendable {
    let step: MiddlewareStep

    /// Lets the call through with `context` (the one received, or a modified copy).
    public func callAsFunction(_ context: MiddlewareContext) { step.answer(.pass(context)) }

    /// Lets the call go no further (what returning without `next` does for an immediate answer).
    public func drop() { step.answer(.drop) }

    /// Says this middleware answers after it returns: the caller goes on at once, and the call
    /// continues through the rest of the chain when `next` is called. Events keep the order in
    /// which they entered the chain: one answered early waits for those before it.
    public func later() { step.deferAnswer() }
}

/// One middleware's turn with one call: who answered, when, and what.
final class MiddlewareStep: @unchecked Sendable {
    enum Answer { case pass(MiddlewareContext), drop }
    /// What the middleware did by the time it returned.
    enum Returned { case answered(Answer), deferred, unanswered }

    private enum Phase {
        /// The middleware is running; `later()` may have been said.
        case inCall(deferred: Bool)
        /// Returned having said `later()`; waits for `startWaiting`.
        case deferredReturned
        /// Waiting for the answer, with its ticket in the chain's order.
        case waiting
        /// Nothing more is taken: answered, dropped unanswered, or past the deadline.
        case closed(why: String)
    }

    let plugin: MiddlewarePlugin
    /// The middleware's position in the chain.
    let index: Int
    /// "track event m-1", "flush": for reports.
    let what: String
    private let lock = Lock()
    private var phase = Phase.inCall(deferred: false)
    private var answerValue: Answer?
    /// Set for reset and flush, whose caller waits for a deferred answer.
    private let waiter: DispatchSemaphoreBox?
    private(set) var ticket: UInt64 = 0

    init(plugin: MiddlewarePlugin, index: Int, what: String, control: Bool) {
        self.plugin = plugin
        self.index = index
        self.what = what
        waiter = control ? DispatchSemaphoreBox() : nil
    }

    func deferAnswer() {
        let late = lock.withLock { () -> Bool in
            guard case .inCall = phase else { return true }
            phase = .inCall(deferred: true)
            return false
        }
        if late { plugin.reportMisuse(self, "called next.later() after returning; ignored") }
    }

    func answer(_ answer: Answer) {
        enum Then { case nothing, handOff, unordered, refused(String) }
        let then = lock.withLock { () -> Then in
            if answerValue != nil { return .refused("called next twice; the second call is ignored") }
            switch phase {
            case .inCall, .deferredReturned:
                answerValue = answer
                return .nothing
            case .waiting:
                answerValue = answer
                phase = .closed(why: "answered")
                return .handOff
            case .closed(why: "unanswered") where waiter == nil:
                // analytics-ios: `next` called after the block returned, without `later()`. The
                // event goes on (out of order: it had left the chain's order when the block
                // returned). A late drop changes nothing: the event was dropped then.
                answerValue = answer
                if case .drop = answer { return .nothing }
                return .unordered
            case .closed(let why):
                return .refused(why == "expired" ? "called next after its deadline (the event was dropped then); ignored"
                                                 : "called next after returning without next.later() (the call was dropped then); ignored")
            }
        }
        switch then {
        case .nothing: waiter?.signal()
        case .handOff: if let waiter { waiter.signal() } else { plugin.answeredLater(self, answer) }
        case .unordered: plugin.answeredUnordered(self, answer)
        case .refused(let text): plugin.reportMisuse(self, text)
        }
    }

    /// The middleware returned: what it did.
    func returned() -> Returned {
        lock.withLock {
            if let answerValue {
                phase = .closed(why: "answered")
                return .answered(answerValue)
            }
            if case .inCall(deferred: true) = phase {
                phase = .deferredReturned
                return .deferred
            }
            phase = .closed(why: "unanswered")
            return .unanswered
        }
    }

    /// A deferred event's answer is now awaited under `ticket`; an answer that came meanwhile is
    /// handed on at once. Returns false when it had come.
    func startWaiting(ticket: UInt64) -> Answer? {
        lock.withLock {
            self.ticket = ticket
            if let answerValue {
                phase = .closed(why: "answered")
                return answerValue
            }
            phase = .waiting
            return nil
        }
    }

    /// The deadline passed: true when it was still waiting (then no answer is taken any more).
    func expire() -> Bool {
        lock.withLock {
            guard case .waiting = phase else { return false }
            phase = .closed(why: "expired")
            return true
        }
    }

    /// For reset and flush: waits for the deferred answer until `deadline` (monotonic seconds).
    func waitForAnswer(until deadline: Double) -> Answer? {
        if let early = startWaiting(ticket: 0) { return early }
        _ = waiter?.wait(until: deadline)
        if expire() { return nil }
        return lock.withLock { answerValue }
    }
}

/// A semaphore that can be waited on until a monotonic deadline.
final class DispatchSemaphoreBox: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait(until deadline: Double) -> Bool {
        semaphore.wait(timeout: .now() + max(0, deadline - monotonicSeconds())) == .success
    }
}
