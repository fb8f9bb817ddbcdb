/// One upload's worth of events, already framed as `{"batch":[e1,e2,…` (the closing part with
/// `sentAt` and `writeKey` is added per attempt, so that a retried batch carries a fresh `sentAt`
/// and the server's clock-skew correction stays right).
package struct UploadBatch: Sendable, Equatable {
    /// `{"batch":[` followed by the comma-separated event texts.
    package let head: [UInt8]
    /// `],"sentAt":"` … is written by ``body(sentAt:)``; this is the escaped write key part after it.
    let keyTail: [UInt8]
    package let eventCount: Int

    /// The full request body with the given `sentAt` (ISO-8601 with milliseconds, UTC).
    package func body(sentAt: String = ISOTimestamp.now()) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(head.count + keyTail.count + 40)
        out.append(contentsOf: head)
        out.append(contentsOf: BatchBuilder.sentAtOpen)
        out.append(contentsOf: sentAt.utf8)
        out.append(contentsOf: keyTail)
        return out
    }

    /// ``body(sentAt:)`` gzip-compressed, without building the uncompressed body first.
    func compressedBody(with compressor: GzipCompressor, sentAt: String = ISOTimestamp.now()) throws(GzipError) -> [UInt8] {
        var stamp = sentAt
        let result = head.withUnsafeBytes { head in
            BatchBuilder.sentAtOpen.withUnsafeBytes { open in
                stamp.withUTF8 { stamp in
                    keyTail.withUnsafeBytes { tail in
                        Result { () throws(GzipError) in try compressor.compress(pieces: [head, open, UnsafeRawBufferPointer(stamp), tail]) }
                    }
                }
            }
        }
        return try result.get()
    }

    /// Size of the body: the batch limits apply to this number.
    package var bodySize: Int { head.count + BatchBuilder.sentAtOpen.count + 24 + keyTail.count }
}

/// Builds upload batches by concatenating already-serialized event JSON: events are not parsed
/// or re-encoded on the way out. A batch closes when the next event would push the body over
/// ``BatchLimits/maxBatchBytes`` or the count over ``BatchLimits/maxBatchEvents``.
package struct BatchBuilder: Sendable {
    static let batchOpen: [UInt8] = Array(#"{"batch":["#.utf8)
    static let sentAtOpen: [UInt8] = Array(#"],"sentAt":""#.utf8)

    package let maxBytes: Int
    package let maxEvents: Int
    package let maxEventBytes: Int
    private let keyTail: [UInt8]
    private var head: [UInt8]
    package private(set) var count = 0

    package init(writeKey: String, maxBytes: Int = BatchLimits.maxBatchBytes,
                maxEvents: Int = BatchLimits.maxBatchEvents, maxEventBytes: Int = BatchLimits.maxEventBytes) {
        self.init(writeKey: writeKey, maxBytes: maxBytes, maxEvents: maxEvents, maxEventBytes: maxEventBytes, head: [])
    }

    /// A builder that writes into `buffer`'s storage (an earlier batch's, no longer used): an
    /// upload thread keeps filling the same pages instead of fresh ones per batch.
    init(writeKey: String, reusing buffer: inout [UInt8]) {
        var head: [UInt8] = []
        swap(&head, &buffer)
        self.init(writeKey: writeKey, maxBytes: BatchLimits.maxBatchBytes, maxEvents: BatchLimits.maxBatchEvents,
                  maxEventBytes: BatchLimits.maxEventBytes, head: head)
    }

    private init(writeKey: String, maxBytes: Int, maxEvents: Int, maxEventBytes: Int, head buffer: consuming [UInt8]) {
        var tail = Array(#"","writeKey":"#.utf8)
        JSON.string(writeKey).write(to: &tail)
        tail.append(UInt8(ascii: "}"))
        self.keyTail = tail
        self.maxBytes = maxBytes
        self.maxEvents = max(1, maxEvents)
        self.maxEventBytes = maxEventBytes
        var head = consume buffer
        head.removeAll(keepingCapacity: true)
        head.append(contentsOf: BatchBuilder.batchOpen)
        if head.capacity < min(maxBytes, 1 << 20) { head.reserveCapacity(min(maxBytes, 1 << 20)) }
        self.head = head
    }

    package var isEmpty: Bool { count == 0 }

    /// Body size if the batch were finished now.
    package var currentSize: Int { head.count + BatchBuilder.sentAtOpen.count + 24 + keyTail.count }

    /// Would `size` more bytes of event fit in this batch?
    package func fits(eventSize size: Int) -> Bool {
        count < maxEvents && currentSize + (count > 0 ? 1 : 0) + size <= maxBytes
    }

    /// Adds one serialized event. Returns false (and adds nothing) when the batch is full: finish
    /// it and add the event to the next one. Throws when the event can never be sent.
    package mutating func append(_ event: UnsafeRawBufferPointer) throws(BatchEventError) -> Bool {
        try BatchLimits.check(event: event, limit: maxEventBytes)
        guard fits(eventSize: event.count) else {
            if count == 0 {
                // Cannot happen with sane limits (an event is ≤ 32 KB), but a tiny maxBytes must
                // not make the caller loop forever.
                throw BatchEventError(reason: .tooLarge(size: event.count, limit: maxBytes - currentSize))
            }
            return false
        }
        if count > 0 { head.append(UInt8(ascii: ",")) }
        head.append(contentsOf: event)
        count += 1
        return true
    }

    package mutating func append(_ event: [UInt8]) throws(BatchEventError) -> Bool {
        let r = event.withUnsafeBytes { raw in Result { () throws(BatchEventError) in try append(raw) } }
        return try r.get()
    }

    /// Closes the batch and starts an empty one.
    package mutating func finish() -> UploadBatch {
        let batch = UploadBatch(head: head, keyTail: keyTail, eventCount: count)
        head = BatchBuilder.batchOpen
        count = 0
        return batch
    }

    /// Splits a list of serialized events into batches. Events that can never be sent are
    /// returned in `rejected` (with their index) and do not stop the others.
    package static func split(_ events: [[UInt8]], writeKey: String, maxBytes: Int = BatchLimits.maxBatchBytes,
                             maxEvents: Int = BatchLimits.maxBatchEvents)
        -> (batches: [UploadBatch], rejected: [BatchEventError])
    {
        var builder = BatchBuilder(writeKey: writeKey, maxBytes: maxBytes, maxEvents: maxEvents)
        var batches: [UploadBatch] = []
        var rejected: [BatchEventError] = []
        for (i, event) in events.enumerated() {
            do {
                if try !builder.append(event) {
                    batches.append(builder.finish())
                    _ = try builder.append(event)
                }
            } catch {
                var e = error
                e.index = i
                rejected.append(e)
            }
        }
        if !builder.isEmpty { batches.append(builder.finish()) }
        return (batches, rejected)
    }
}
