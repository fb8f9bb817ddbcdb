extension DurableQueue {
    /// A place in the queue: a segment's sequence number and a byte offset in it. Positions only
    /// grow, which is what lets acknowledgement be a single persisted position.
    package struct Position: Sendable, Hashable, Comparable, CustomStringConvertible {
        public let segment: UInt64
        public let offset: Int

        public init(segment: UInt64, offset: Int) {
            self.segment = segment
            self.offset = offset
        }

        public static func < (a: Position, b: Position) -> Bool {
            a.segment != b.segment ? a.segment < b.segment : a.offset < b.offset
        }

        public var description: String { "\(StorageSegmentName.fileName(segment))@\(offset)" }
    }

    /// Events read from the queue for one upload, oldest first, with the position to acknowledge
    /// once they are delivered. All payloads share one buffer: reading a batch costs one allocation,
    /// not one per event. Each element is the event's stored bytes (its JSON text).
    package struct Batch: Sendable, RandomAccessCollection {
        /// Where the batch begins (the acknowledged position when it was read).
        public let start: Position
        /// The position just past the batch's last event; `acknowledge` persists it.
        public let end: Position
        let bytes: [UInt8]
        let bounds: [Int]

        init(start: Position, end: Position, bytes: [UInt8], bounds: [Int]) {
            self.start = start
            self.end = end
            self.bytes = bytes
            self.bounds = bounds
        }

        public var startIndex: Int { 0 }
        public var endIndex: Int { bounds.count - 1 }
        public subscript(index: Int) -> ArraySlice<UInt8> { bytes[bounds[index]..<bounds[index + 1]] }

        /// The batch's byte storage, for the next `peekBatch(…, reusing:)` once this batch is done.
        var recycledBytes: [UInt8] { bytes }

        /// Total payload bytes in the batch.
        public var byteCount: Int { bytes.count }

        /// The events as a JSON array (`[e1,e2,...]`), ready to embed in an upload body without
        /// re-parsing or re-serializing them.
        public func jsonArrayBytes() -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + count + 2)
            out.append(UInt8(ascii: "["))
            for index in indices {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: self[index])
            }
            out.append(UInt8(ascii: "]"))
            return out
        }
    }
}
