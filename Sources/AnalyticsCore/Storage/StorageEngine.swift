#if canImport(Glibc)
import Glibc
#endif

/// The durable queue's state machine over its directory: segment list, append file, acknowledged
/// position, recovery at open, cap enforcement and corruption handling. Not thread-safe:
/// `DurableQueue` runs every call under its one lock. Problems that were repaired rather than
/// thrown collect in `pendingErrors` so the facade can report them after unlocking.
final class StorageEngine {
    typealias Position = DurableQueue.Position
    struct Segment {
        let id: UInt64
        var size: Int
        var events = 0
        /// Old-format segments are read (once vouched for), never appended to.
        var format = StorageRecordFormat.Version.keyed
    }

    let directory: String
    let configuration: DurableQueue.Configuration
    let segmentLimit: Int
    let headerSize = StorageRecordFormat.segmentHeaderSize
    /// The record header of the format appended now.
    let recordHeaderSize = StorageRecordFormat.recordHeaderSize
    /// The storage's key: every appended record carries its MAC, every record read is checked.
    let secret: StorageSecret
    var lock: StorageDirectoryLock?
    /// Segments oldest first; the last one is the append target.
    var segments: [Segment] = []
    var active: StorageFile?
    /// The active segment mapped shared for appends (`append`): its file is extended (with blocks
    /// reserved) to `mappedBytes`, so an append is a copy into the page cache — the same kernel
    /// memory write(2) would fill, so it survives SIGKILL alike — instead of a system call. nil
    /// when the file system cannot reserve the space (appends then use pwrite).
    var mapped: UnsafeMutableRawPointer?
    var mappedBytes = 0
    /// How far the mapping's pages are faulted in writable: appends prefault the next stretch
    /// in one madvise(MADV_POPULATE_WRITE) instead of taking a page fault every 4 KiB.
    var populatedBytes = 0
    /// Where this process's first append went: records from there on were written by this
    /// engine and are read back without recomputing their checksum (it guards against torn
    /// writes and damage between runs, which cannot have touched them).
    var appendedFrom: DurableQueue.Position?
    /// MADV_POPULATE_WRITE is Linux 5.14+; after one refusal the pages fault in one by one.
    var canPopulate = true
    static let populateStretch = 256 << 10
    var readFile: StorageFile?
    var readFileSegment: UInt64 = .max
    let reader: StorageSegmentReader
    var acknowledged = Position(segment: 0, offset: 0)
    var totalBytes = 0
    var scratch: UnsafeMutableRawBufferPointer
    var appendsSinceSync = 0
    var cursorDurable = true
    var setAsideRegions: Set<Position> = []
    var isClosed = false
    var pendingErrors: [QueueError] = []
    /// Records stored and not yet acknowledged: counted at open, then kept up to date.
    var pendingEvents = 0
    /// The last batch handed out by `peek` (until acknowledged or released), and how many of its
    /// events the cap removed meanwhile (not counted as dropped: that batch may still deliver them).
    var inflight: (start: Position, end: Position)?
    var evictedInFlight = (events: 0, bytes: 0)
    /// The upload attempts of the batch at a position (persisted in `attempts`).
    var attemptsRecord: (start: Position, count: Int)?
    /// Size and record count of sealed segments, to report what a lost file held.
    var manifest: StorageSegmentManifest!

    init(directory: String, configuration: DurableQueue.Configuration) throws(QueueError) {
        try configuration.validate()
        self.directory = directory
        self.configuration = configuration
        segmentLimit = configuration.effectiveSegmentBytes
        try StorageDirectory.create(directory)
        let lock = try StorageDirectoryLock(path: directory + "/LOCK")
        let secret: StorageSecret
        if let given = configuration.secret {
            secret = given
        } else {
            secret = try StorageSecret.open(path: directory + "/" + StorageSecret.fileName)
        }
        self.secret = secret
        reader = StorageSegmentReader(payloadLimit: configuration.maxRecordBytes, key: secret.key)
        scratch = .allocate(byteCount: 64 << 10, alignment: 16)
        self.lock = lock
        // A shared secret's problem is reported by whoever opened it.
        if configuration.secret == nil, let problem = secret.problem { pendingErrors.append(problem) }
        try recover()
    }

    deinit {
        try? unmapActive()  // a queue dropped without close keeps its exact size too
        scratch.deallocate()
    }

    /// Bytes the segment files occupy: the records, plus the reserved rest of a mapped segment.
    var diskBytes: Int { totalBytes + (mapped != nil ? mappedBytes - (segments.last?.size ?? 0) : 0) }

    var cursorPath: String { directory + "/cursor" }
    var attemptsPath: String { directory + "/attempts" }
    func path(_ id: UInt64) -> String { directory + "/" + StorageSegmentName.fileName(id) }

    // MARK: Lifecycle

    func flush() throws(QueueError) {
        guard !isClosed, let active else { throw .closed(path: directory) }
        try active.sync()
        if !cursorDurable {
            try StorageCursorFile.write(acknowledged, path: cursorPath, directory: directory, durable: true)
            cursorDurable = true
        } else {
            try StorageDirectory.sync(directory)
        }
    }

    func close() throws(QueueError) {
        guard !isClosed else { return }
        defer {
            isClosed = true
            active = nil
            readFile = nil
            lock = nil
        }
        try unmapActive()
        try flush()
    }
}
