/// The Segment tracking API's size limits, enforced before upload so that one bad event can
/// never make a whole batch fail with 400 or block the queue behind it.
package enum BatchLimits {
    /// Largest serialized event the API accepts (32 KB).
    package static let maxEventBytes = 32 * 1024
    /// Largest upload body the SDKs send (the API's hard limit is 500 KB; 475,000 leaves room
    /// for proxies that add to the request).
    package static let maxBatchBytes = 475_000
    /// Largest batch request body the tracking API takes (500 KB; it answers 400 past it).
    package static let apiMaxBatchBytes = 500 * 1024
    /// Most events in one batch.
    package static let maxBatchEvents = 2_500
    /// Most nested objects and arrays in one event, the event object itself counting as one. The
    /// upload refuses deeper events when they are accepted and `analytics-host receive` refuses
    /// them with 400: a batch body wraps each event in two more levels (`{"batch":[…]}`), which
    /// the JSON parser's limit must still hold.
    package static let maxEventDepth = JSON.maxNestingDepth - 2

    /// Throws when `event` (already-serialized JSON) cannot go into any batch: over the size limit,
    /// or not a JSON object text at all. Call it when an event is accepted, so that the caller
    /// hears about the problem while it still has the event in hand.
    package static func check(event: UnsafeRawBufferPointer, limit: Int = maxEventBytes) throws(BatchEventError) {
        if event.count > limit {
            throw BatchEventError(reason: .tooLarge(size: event.count, limit: limit))
        }
        guard event.count >= 2, event[0] == UInt8(ascii: "{"), event[event.count - 1] == UInt8(ascii: "}") else {
            throw BatchEventError(reason: .notAnObject)
        }
    }

    package static func check(event: [UInt8], limit: Int = maxEventBytes) throws(BatchEventError) {
        try event.withUnsafeBytes { raw in Result { () throws(BatchEventError) in try check(event: raw, limit: limit) } }.get()
    }
}

/// Why an event was refused by the batcher. The event is rejected (reported), never dropped silently.
package struct BatchEventError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Reason: Sendable, Equatable {
        case tooLarge(size: Int, limit: Int)
        case notAnObject
    }
    package var reason: Reason
    /// Position of the event in the input, when the error comes from splitting a list.
    package var index: Int?

    package init(reason: Reason, index: Int? = nil) {
        self.reason = reason
        self.index = index
    }

    package var description: String {
        let which = index.map { "event #\($0)" } ?? "event"
        switch reason {
        case .tooLarge(let size, let limit):
            return "\(which) rejected: \(size) bytes is over the \(limit)-byte limit per event"
        case .notAnObject:
            return "\(which) rejected: serialized event is not a JSON object"
        }
    }
}
