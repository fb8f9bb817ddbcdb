extension DurableQueue {
    /// When appended events are forced to the storage device. A SIGKILL never loses an accepted
    /// event either way (written data lives in the OS page cache); these policies trade speed for
    /// survival of a power loss or kernel crash.
    package enum FsyncPolicy: Sendable, Equatable {
        /// Never during appends; only on `flush()` and `close()`. The default.
        case never
        /// After every append (slow: one device flush per event).
        case always
        /// After every `n` appends.
        case every(appends: Int)
    }

    /// What an append does when the disk cap is reached.
    package enum FullPolicy: Sendable, Equatable {
        /// Delete the oldest segment(s); their unacknowledged events are counted and reported as
        /// `QueueError.droppedOverCap`. For apps: a call never waits for the network.
        case dropOldest
        /// Wait until acknowledgements free room: nothing is dropped. For batch input, which then
        /// reads only as fast as the server accepts.
        case waitForRoom
    }

    /// Limits and policies of a queue.
    package struct Configuration: Sendable, Equatable {
        /// Disk cap for all segment files. Past it the oldest events are dropped (and reported),
        /// so offline growth is bounded.
        public var maxDiskBytes: Int
        /// A segment is closed and a new one started past this size. Fully acknowledged segments are
        /// deleted whole, so this is also the granularity of reclaiming space (at most a quarter of
        /// the cap is used, so dropping over the cap never removes too much at once).
        public var segmentBytes: Int
        /// Largest event accepted; larger appends are refused with `QueueError.recordTooLarge`.
        public var maxRecordBytes: Int
        public var fsync: FsyncPolicy
        public var whenFull: FullPolicy
        /// The key of the records' MACs: the storage's (``StorageSecret/open(directory:)``, shared
        /// by the queues of one storage directory); nil: a key file of the queue's own directory.
        public var secret: StorageSecret?

        public init(maxDiskBytes: Int = 64 << 20, segmentBytes: Int = 4 << 20, maxRecordBytes: Int = 1 << 20,
                    fsync: FsyncPolicy = .never, whenFull: FullPolicy = .dropOldest, secret: StorageSecret? = nil) {
            self.whenFull = whenFull
            self.secret = secret
            self.maxDiskBytes = maxDiskBytes
            self.segmentBytes = segmentBytes
            self.maxRecordBytes = maxRecordBytes
            self.fsync = fsync
        }

        /// The segment size actually used.
        var effectiveSegmentBytes: Int { max(4096, min(segmentBytes, maxDiskBytes / 4)) }

        func validate() throws(QueueError) {
            if maxRecordBytes < 1 || maxRecordBytes > Int(UInt32.max) {
                throw .invalidConfiguration(reason: "maxRecordBytes must be between 1 and \(UInt32.max), got \(maxRecordBytes)")
            }
            if segmentBytes < 1 { throw .invalidConfiguration(reason: "segmentBytes must be positive, got \(segmentBytes)") }
            let smallest = StorageRecordFormat.segmentHeaderSize + StorageRecordFormat.recordHeaderSize + maxRecordBytes
            if maxDiskBytes < max(smallest, 16 << 10) {
                throw .invalidConfiguration(reason: "maxDiskBytes \(maxDiskBytes) is smaller than \(max(smallest, 16 << 10)) (one largest record, at least 16 KiB)")
            }
            if case .every(let n) = fsync, n < 1 {
                throw .invalidConfiguration(reason: "fsync every \(n) appends: the count must be positive")
            }
        }
    }
}
