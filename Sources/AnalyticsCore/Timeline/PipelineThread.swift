import Glibc

/// Which threads are running the pipeline right now: a client's fan-out (and the inline
/// destinations it calls, Segment.io's timeline among them), an inline destination's control
/// call, or a destination's worker.
///
/// A plugin on such a thread may call back into the client (analytics-swift plugins call
/// `analytics.track` from `execute`; a LivePlugin scoped to Segment.io calls `analytics.track` from
/// `screen()`; a library calls `send_event` from a hook). Running that call's pipeline there would
/// take locks the thread already holds (the fan-out's, the inline destination's) or wait for room in
/// a queue only this thread drains. So the client asks this marker and, on a marked thread, runs
/// the call later instead, in order, through the same journaled path as `send_event`: re-entry
/// never waits on the pipeline, by construction rather than by care in each plugin.
enum PipelineThread {
    /// A thread-specific depth (stored as the pointer's bit pattern; 0 = outside).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// True while this thread runs the pipeline.
    @inline(__always)
    static var isInside: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` with this thread marked (nesting allowed).
    @inline(__always)
    static func run<R>(_ body: () throws -> R) rethrows -> R {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: Int(bitPattern: previous) &+ 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }

    /// Marks this thread for good (a destination's worker: everything it runs is pipeline).
    static func markForever() {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
    }
}
