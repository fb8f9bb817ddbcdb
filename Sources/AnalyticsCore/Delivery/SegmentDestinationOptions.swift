/// Knobs of the built-in Segment.io destination that settings do not carry: where tests point it,
/// how long a `flush()` waits for the network, how hard the queue syncs. Part of ``Configuration``
/// (`configuration.segment`); the disk cap is ``Configuration/maxQueueBytes``.
public struct SegmentDestinationOptions: Sendable {
    /// Overrides `integrations["Segment.io"].apiHost` (and every refresh of it), e.g.
    /// `http://127.0.0.1:8080/v1` for a local server. nil: the settings decide.
    public var apiHost: String?
    /// Seconds without a response before an upload attempt fails (and is retried).
    public var requestTimeout: Double = 15
    /// zlib level of request bodies (1 fastest … 9; 0 uncompressed).
    public var compressionLevel: Int32 = 1
    /// Longest time `flush()` waits for the pending events to be uploaded before returning with
    /// the rest still queued on disk. A flush returns sooner when an attempt fails (network down,
    /// server error): the events stay queued and the backoff continues in the background.
    public var flushWait: Double = 5
    /// When appended events are forced to the device (a SIGKILL loses nothing either way).
    public var fsync: DurableQueue.FsyncPolicy = .never

    public init() {}
}
