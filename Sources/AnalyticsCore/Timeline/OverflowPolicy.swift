/// What a destination's full queue does with one more event.
public enum OverflowPolicy: Sendable, Equatable {
    /// Drop the oldest queued event, count it and report it: callers never wait (an app's UI
    /// thread must not stall because a destination is slow).
    case dropOldest
    /// Make the caller wait until the destination catches up, at most this many seconds, then drop
    /// the oldest as above: for batch ingestion, where losing events is worse than waiting.
    /// `.infinity` waits as long as it takes (the command: input slows, nothing is dropped).
    case wait(seconds: Double)
}
