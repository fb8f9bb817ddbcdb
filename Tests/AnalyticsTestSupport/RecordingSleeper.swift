import AnalyticsCore

/// A clock that only moves when told to: with ``RecordingSleeper`` it makes hours of retry
/// policy run in microseconds while the uploader still sees time pass.
public final class VirtualClock: Sendable {
    private let now: Locked<Double>
    public init(start: Double = 1_000) { now = Locked(start) }
    public func read() -> Double { now.withLock { $0 } }
    public func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
}

/// A retry sleeper that records each requested wait and returns at once (advancing a
/// ``VirtualClock`` when given). `cancelAfter` makes the n-th wait report cancellation, as a
/// shutdown would.
public final class RecordingSleeper: RetrySleeper, Sendable {
    private let recorded = Locked<[Double]>([])
    private let clock: VirtualClock?
    private let cancelAfter: Int?

    public init(clock: VirtualClock? = nil, cancelAfter: Int? = nil) {
        self.clock = clock
        self.cancelAfter = cancelAfter
    }

    public var waits: [Double] { recorded.withLock { $0 } }

    public func sleep(seconds: Double) -> Bool {
        let n = recorded.withLock { $0.append(seconds); return $0.count }
        if let cancelAfter, n >= cancelAfter { return false }
        clock?.advance(seconds)
        return true
    }
}
