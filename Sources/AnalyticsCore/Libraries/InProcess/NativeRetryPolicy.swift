/// How a native destination retries a hook that reported a retryable failure: a few attempts with
/// exponential backoff, bounded so that one struggling library holds its own queue for seconds at
/// most (it has its own worker, so nobody else waits). Then the failure is reported.
public struct NativeRetryPolicy: Sendable, Equatable {
    /// Calls in all, the first one included (at least 1).
    public var maxAttempts: Int
    /// Wait before the second attempt, in seconds; doubled for each further one.
    public var initialDelay: Double
    /// Longest single wait, in seconds.
    public var maxDelay: Double

    public init(maxAttempts: Int = 4, initialDelay: Double = 0.1, maxDelay: Double = 2) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = max(0, initialDelay)
        self.maxDelay = max(0, maxDelay)
    }

    /// The wait after failed attempt `attempt` (1-based).
    public func delay(afterAttempt attempt: Int) -> Double {
        var delay = initialDelay
        for _ in 1..<max(1, attempt) where delay < maxDelay { delay *= 2 }
        return min(delay, maxDelay)
    }
}
