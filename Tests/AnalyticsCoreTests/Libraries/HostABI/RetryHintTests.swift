@testable import AnalyticsCore
import Foundation
import Testing

/// `AH_EXT_RETRY_AFTER`'s host side: the wait a library asked for sets the next retry's delay,
/// never shortens the backoff, is bounded, used once, and refused after the instance ended.
@Suite struct RetryHintTests {
    let policy = NativeRetryPolicy(maxAttempts: 4, initialDelay: 0.1, maxDelay: 2, maxHintedDelay: 30)

    @Test func theLongerOfBackoffAndRetryAfterIsWaitedOnce() {
        let hint = RetryHint()
        #expect(policy.delay(afterAttempt: 1, hint: hint) == 0.1, "no hint: the backoff")
        #expect(hint.set(delay: 5, now: monotonicSeconds()))
        let first = policy.delay(afterAttempt: 1, hint: hint)
        #expect(first > 4.9 && first <= 5, "\(first)")
        #expect(policy.delay(afterAttempt: 1, hint: hint) == 0.1, "a retry uses the hint up")
        #expect(hint.set(delay: 0.01))
        #expect(policy.delay(afterAttempt: 3, hint: hint) == 0.4, "a shorter hint never shortens the backoff")
    }

    @Test func aLaterLongerHintWinsAndTheWaitIsBounded() {
        let hint = RetryHint()
        let now = monotonicSeconds()
        #expect(hint.set(delay: 3, now: now))
        #expect(hint.set(delay: 1, now: now), "a shorter one given meanwhile does not win")
        #expect(hint.take(now: now) == 3)
        #expect(hint.set(delay: 3600, now: monotonicSeconds()))
        #expect(policy.delay(afterAttempt: 1, hint: hint) == 30, "bounded by maxHintedDelay")
    }

    @Test func anEndedInstanceRefusesHints() {
        let hint = RetryHint()
        hint.end()
        #expect(!hint.set(delay: 1))
        #expect(hint.take() == nil)
    }
}
