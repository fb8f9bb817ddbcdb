/// What a client's signals did, for tests, the run summary and the benchmark.
public struct SignalsStats: Sendable, Equatable {
    /// Signals accepted by `emit` (each got an index).
    public var emitted = 0
    /// Signals the signals thread handed to broadcasters and subscribers.
    public var dispatched = 0
    /// Oldest signals shed because the dispatch queue was full.
    public var shedQueueFull = 0
    /// Oldest signals shed while waiting for a runtime (a subscriber not ready yet).
    public var shedBeforeReady = 0
    /// Deliveries to subscribers (one per signal per subscriber).
    public var delivered = 0
    /// Events that became instrumentation signals, and those skipped because signal processing
    /// made them (the loop guard).
    public var instrumented = 0
    public var loopGuarded = 0
    /// Relays of the broadcasters (by count, interval or flush).
    public var relays = 0
}
