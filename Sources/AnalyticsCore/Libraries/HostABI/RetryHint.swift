import Foundation

/// How long an instance's next retry must wait, as its library heard it from the vendor
/// (`AH_EXT_RETRY_AFTER`: a 429 or 503 with Retry-After). Set from any thread (a hook, or an HTTP
/// answer on a host thread); taken by the thread that retries, which waits at least that long.
/// Retry-After is about the service rather than one event, so there is one hint per instance.
final class RetryHint: Sendable {
    private struct State {
        /// Monotonic seconds before which the next retry must not start (nil: no hint).
        var notBefore: Double?
        var ended = false
    }
    private let state = Locked(State())

    /// `retry_after(delay_ms)`: false once the instance ended. The later deadline wins.
    func set(delay seconds: Double, now: Double = monotonicSeconds()) -> Bool {
        state.withLock { s in
            guard !s.ended else { return false }
            let deadline = now + max(0, seconds)
            s.notBefore = max(s.notBefore ?? deadline, deadline)
            return true
        }
    }

    /// The wait still due (0 when the deadline passed), and the hint is used up; nil without one.
    func take(now: Double = monotonicSeconds()) -> Double? {
        state.withLock { s in
            defer { s.notBefore = nil }
            return s.notBefore.map { max(0, $0 - now) }
        }
    }

    func end() { state.withLock { $0.ended = true; $0.notBefore = nil } }
}

extension NativeRetryPolicy {
    /// The wait before the retry after failed attempt `attempt`: the policy's backoff, or the
    /// library's Retry-After when longer, bounded by `maxHintedDelay`.
    func delay(afterAttempt attempt: Int, hint: RetryHint?) -> Double {
        let backoff = delay(afterAttempt: attempt)
        guard let hinted = hint?.take() else { return backoff }
        return max(backoff, min(hinted, maxHintedDelay))
    }
}
