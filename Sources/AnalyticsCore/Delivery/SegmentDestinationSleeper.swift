/// The upload thread's retry sleeper: an ``InterruptibleSleeper`` (shutdown cuts any wait short)
/// that also tells the upload loop when a backoff wait begins and ends. A wait begins only after a
/// failed attempt, which is how a waiting `flush()` learns that the network is failing and returns
/// at once instead of sitting out a backoff that may last minutes.
final class SegmentDestinationSleeper: RetrySleeper {
    private let sleeper = InterruptibleSleeper()
    private let waiting: @Sendable (Bool) -> Void

    init(waiting: @escaping @Sendable (Bool) -> Void) { self.waiting = waiting }

    func sleep(seconds: Double) -> Bool {
        waiting(true)
        defer { waiting(false) }
        return sleeper.sleep(seconds: seconds)
    }

    /// Ends the current and every later wait.
    func cancel() { sleeper.cancel() }
}
