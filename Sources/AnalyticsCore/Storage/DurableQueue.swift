/// The upload destination's on-disk event queue.
///
/// Why it looks like this: an event the destination accepts must survive a crash, so `append`
/// returns only after the event was written (write(2)) to an append-only segment file — the OS page
/// cache survives SIGKILL; `Configuration.fsync` adds power-loss safety. Appends never rewrite
/// earlier data. Delivery reads batches (`peekBatch`) and removes them with `acknowledge`, which
/// persists one position atomically and deletes fully delivered segments; a crash therefore
/// re-delivers at most the batch in flight. Disk use is capped (oldest events are dropped and
/// reported), damaged files are repaired or set aside with an error while every intact event is
/// kept, and a second opener of the same directory gets `QueueError.locked`.
///
/// Thread-safe: every call runs under one lock. Memory stays flat whatever the queue's length.
public final class DurableQueue: Sendable {
    /// The queue's own directory (segments `*.seg`, `cursor`, `LOCK`).
    public let directory: String
    public let configuration: Configuration
    private let engine: Locked<StorageEngine>
    private let onError: @Sendable (QueueError) -> Void

    /// Opens (creating if needed) the queue stored in `directory`, recovering whatever a previous
    /// run left. Problems repaired on the way (torn tail, damaged bytes, dropped events) are passed
    /// to `onError`; failures that prevent opening are thrown.
    public init(directory: String, configuration: Configuration = Configuration(),
                onError: @escaping @Sendable (QueueError) -> Void = { _ in }) throws(QueueError) {
        let engine = try StorageEngine(directory: directory, configuration: configuration)
        let startupErrors = engine.pendingErrors
        engine.pendingErrors = []
        self.directory = directory
        self.configuration = configuration
        self.engine = Locked(engine)
        self.onError = onError
        for error in startupErrors { onError(error) }
    }

    /// Runs `body` under the lock, then reports repaired problems outside it (so the callback may
    /// call back into the queue).
    @inline(__always)
    private func perform<R>(_ body: (StorageEngine) throws(QueueError) -> R) throws(QueueError) -> R {
        let (result, errors) = engine.withLock { (engine) -> (Result<R, QueueError>, [QueueError]) in
            let result = Result { () throws(QueueError) in try body(engine) }
            if engine.pendingErrors.isEmpty { return (result, []) }
            defer { engine.pendingErrors = [] }
            return (result, engine.pendingErrors)
        }
        for error in errors { onError(error) }
        return try result.get()
    }

    /// Stores one event (its JSON text). When this returns, the event is in the segment file.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.append(bytes) }
    }

    public func append(_ bytes: [UInt8]) throws(QueueError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(QueueError) in try append(raw) } }.get()
    }

    public func append(_ text: String) throws(QueueError) {
        var text = text
        try text.withUTF8 { utf8 in Result { () throws(QueueError) in try append(UnsafeRawBufferPointer(utf8)) } }.get()
    }

    /// Stores an event's serialized JSON.
    public func append(_ event: Event) throws(QueueError) {
        try append(event.serializedBytes)
    }

    /// Stores several events under one lock acquisition, in order. On error, the events before the
    /// failing one are stored.
    public func append(contentsOf events: [[UInt8]]) throws(QueueError) {
        try perform { (engine) throws(QueueError) in
            for event in events {
                try event.withUnsafeBytes { raw in Result { () throws(QueueError) in try engine.append(raw) } }.get()
            }
        }
    }

    /// The oldest unacknowledged events: at most `maxEvents`, and at most `maxBytes` of payload
    /// unless a single event is larger (a batch always holds at least one event when any is stored,
    /// so nothing can block the queue). Reading does not remove anything: the same events come back
    /// until they are acknowledged.
    public func peekBatch(maxEvents: Int, maxBytes: Int) throws(QueueError) -> Batch {
        try perform { (engine) throws(QueueError) in try engine.peek(maxEvents: max(1, maxEvents), maxBytes: max(1, maxBytes)) }
    }

    /// Removes a delivered batch for good (persists the position after it).
    public func acknowledge(_ batch: Batch) throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.acknowledge(batch) }
    }

    /// Whether any stored event awaits acknowledgement.
    public var hasPendingEvents: Bool {
        engine.withLock { $0.hasPendingEvents }
    }

    /// Bytes currently used by segment files (what the cap limits).
    public var diskBytes: Int {
        engine.withLock { $0.totalBytes }
    }

    /// Forces appended data and the acknowledged position to the storage device.
    public func flush() throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.flush() }
    }

    /// Flushes and releases the directory (another queue may open it afterwards). Later calls throw
    /// `QueueError.closed`.
    public func close() throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.close() }
    }
}
