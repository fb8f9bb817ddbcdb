import Foundation

/// The upload destination's on-disk event queue.
///
/// Why it looks like this: an event the destination accepts must survive a crash, so `append`
/// returns only after the event is in the kernel's page cache of an append-only segment file,
/// which survives SIGKILL of the process. The active segment is mapped shared (its space reserved
/// with posix_fallocate, so a full disk fails at the reservation, never inside a copy): an append
/// is a copy into those same kernel pages — what write(2) would do, without the system call. Where
/// the space cannot be reserved (or near the cap) appends use pwrite(2). A record's marker is
/// stored last, so a copy cut short by a kill is recognised at recovery as the append that never
/// returned. Power loss or a kernel crash is a separate policy
/// (`Configuration.fsync`): `.never` (default) forces data to the device only on `flush()`/`close()`,
/// `.every(appends:)` is group commit (one fdatasync per n appends), `.always` one per append.
/// Appends never rewrite earlier data. Delivery reads batches (`peekBatch`) and removes them with `acknowledge`, which
/// persists one position atomically and deletes fully delivered segments; a crash therefore
/// re-delivers at most the batch in flight. Disk use is capped (oldest events are dropped and
/// reported), damaged files are repaired or set aside with an error while every intact event is
/// kept, and a second opener of the same directory gets `QueueError.locked`.
///
/// Thread-safe: every call runs under one lock. Memory stays flat whatever the queue's length.
package final class DurableQueue: @unchecked Sendable {
    /// The queue's own directory (segments `*.seg`, `cursor`, `LOCK`).
    package let directory: String
    package let configuration: Configuration
    /// Guards `engine`; appends waiting for room under the cap wait on it.
    private let condition = NSCondition()
    private let engine: StorageEngine
    private let onError: @Sendable (QueueError) -> Void
    private var roomWaiters = 0  // guarded by condition
    private let roomNeeded = CallbackSlot()

    /// Opens (creating if needed) the queue stored in `directory`, recovering whatever a previous
    /// run left. Problems repaired on the way (torn tail, damaged bytes, dropped events) are passed
    /// to `onError`; failures that prevent opening are thrown.
    package init(directory: String, configuration: Configuration = Configuration(),
                onError: @escaping @Sendable (QueueError) -> Void = { _ in }) throws(QueueError) {
        let engine = try StorageEngine(directory: directory, configuration: configuration)
        let startupErrors = engine.pendingErrors
        engine.pendingErrors = []
        self.directory = directory
        self.configuration = configuration
        self.engine = engine
        self.onError = onError
        for error in startupErrors { onError(error) }
    }

    /// Called (outside the lock) when an append starts waiting for room (`.waitForRoom`), so that
    /// the owner can start an upload that frees it.
    package func whenWaitingForRoom(_ body: @escaping @Sendable () -> Void) {
        roomNeeded.set(body)
    }

    /// Runs `body` under the lock, then reports repaired problems outside it (so the callback may
    /// call back into the queue).
    @inline(__always)
    private func perform<R>(roomFor payload: Int? = nil, _ body: (StorageEngine) throws(QueueError) -> R) throws(QueueError) -> R {
        condition.lock()
        if let payload {
            while !engine.fits(payload: payload) && !engine.isClosed {
                roomWaiters += 1
                condition.unlock()
                roomNeeded()
                condition.lock()
                if !engine.fits(payload: payload) && !engine.isClosed {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 1))
                }
                roomWaiters -= 1
            }
        }
        let result = Result { () throws(QueueError) in try body(engine) }
        var errors: [QueueError] = []
        if !engine.pendingErrors.isEmpty {
            errors = engine.pendingErrors
            engine.pendingErrors = []
        }
        if roomWaiters > 0 { condition.broadcast() }
        condition.unlock()
        for error in errors { onError(error) }
        return try result.get()
    }

    /// Stores one event (its JSON text). When this returns, the event is in the segment file (the
    /// page cache: it survives SIGKILL).
    /// With `.waitForRoom`, a full queue makes this wait until acknowledgements free room (or the
    /// queue closes: `QueueError.closed`).
    package func append(_ bytes: UnsafeRawBufferPointer) throws(QueueError) {
        let room = configuration.whenFull == .waitForRoom ? bytes.count : nil
        try perform(roomFor: room) { (engine) throws(QueueError) in try engine.append(bytes) }
    }

    package func append(_ bytes: [UInt8]) throws(QueueError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(QueueError) in try append(raw) } }.get()
    }

    package func append(_ text: String) throws(QueueError) {
        var text = text
        try text.withUTF8 { utf8 in Result { () throws(QueueError) in try append(UnsafeRawBufferPointer(utf8)) } }.get()
    }

    /// Stores an event's serialized JSON.
    package func append(_ event: Event) throws(QueueError) {
        try event.withSerializedBytes { text in Result { () throws(QueueError) in try append(text) } }.get()
    }

    /// Stores several events under one lock acquisition, in order. On error, the events before the
    /// failing one are stored.
    package func append(contentsOf events: [[UInt8]]) throws(QueueError) {
        if configuration.whenFull == .waitForRoom {
            for event in events { try append(event) }
            return
        }
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
    package func peekBatch(maxEvents: Int, maxBytes: Int) throws(QueueError) -> Batch {
        try perform { (engine) throws(QueueError) in try engine.peek(maxEvents: max(1, maxEvents), maxBytes: max(1, maxBytes)) }
    }

    /// The events after `position` (where an earlier batch ended), for a reader that hands events
    /// on before it acknowledges them; from the acknowledged position when `position` is no longer
    /// on disk (the cap removed it): the batch's `start` says which.
    func peekBatch(after position: Position, maxEvents: Int, maxBytes: Int) throws(QueueError) -> Batch {
        try perform { (engine) throws(QueueError) in try engine.peek(maxEvents: max(1, maxEvents), maxBytes: max(1, maxBytes), from: position) }
    }

    /// `peekBatch` into the storage of an earlier batch's bytes (`Batch.recycledBytes`), for a
    /// reader that takes batch after batch.
    func peekBatch(maxEvents: Int, maxBytes: Int, reusing buffer: inout [UInt8]) throws(QueueError) -> Batch {
        var storage: [UInt8] = []
        swap(&storage, &buffer)
        return try perform { (engine) throws(QueueError) in
            try engine.peek(maxEvents: max(1, maxEvents), maxBytes: max(1, maxBytes), reusing: &storage)
        }
    }

    /// Removes a delivered batch for good (persists the position after it). Returns how many
    /// events left the queue (fewer than the batch when the cap already removed some).
    @discardableResult
    package func acknowledge(_ batch: Batch) throws(QueueError) -> Int {
        try perform { (engine) throws(QueueError) in try engine.acknowledge(batch) }
    }

    /// The batch stays for a later attempt. If the disk cap removed some of its events while it
    /// was out (they could only have been delivered by this batch), they are reported now as
    /// dropped over the cap.
    package func release(_ batch: Batch) {
        _ = try? perform { (engine) throws(QueueError) in engine.release(batch) }
    }

    /// Whether any stored event awaits acknowledgement.
    package var hasPendingEvents: Bool {
        (try? perform { $0.hasPendingEvents }) ?? false
    }

    /// Events stored and not yet acknowledged (exact: counted when the queue opens, then kept).
    package var pendingEvents: Int {
        (try? perform { $0.pendingEvents }) ?? 0
    }

    /// Bytes currently used by segment files (what the cap limits).
    package var diskBytes: Int {
        (try? perform { $0.diskBytes }) ?? 0
    }

    /// How many times the batch starting at `start` was already attempted (across runs): the
    /// `X-Retry-Count` its next attempt carries. 0 for any other position.
    package func attempts(at start: Position) -> Int {
        (try? perform { $0.attempts(at: start) }) ?? 0
    }

    /// Persists that the batch starting at `start` has been attempted `count` times.
    package func recordAttempts(_ count: Int, at start: Position) {
        do { try perform { (engine) throws(QueueError) in try engine.recordAttempts(count, at: start) } } catch {
            onError(error)
        }
    }

    /// Forces appended data and the acknowledged position to the storage device.
    package func flush() throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.flush() }
    }

    /// Flushes and releases the directory (another queue may open it afterwards). Later calls throw
    /// `QueueError.closed`; appends waiting for room end with it.
    package func close() throws(QueueError) {
        try perform { (engine) throws(QueueError) in try engine.close() }
    }
}
