#if canImport(Glibc)
import Glibc
#endif

/// The durable queue's state machine over its directory: segment list, append file, acknowledged
/// position, recovery at open, cap enforcement and corruption handling. Not thread-safe:
/// `DurableQueue` runs every call under its one lock. Problems that were repaired rather than
/// thrown collect in `pendingErrors` so the facade can report them after unlocking.
final class StorageEngine {
    typealias Position = DurableQueue.Position
    struct Segment { let id: UInt64; var size: Int; var events = 0 }

    let directory: String
    let configuration: DurableQueue.Configuration
    private let segmentLimit: Int
    private let headerSize = StorageRecordFormat.segmentHeaderSize
    private let recordHeaderSize = StorageRecordFormat.recordHeaderSize
    private var lock: StorageDirectoryLock?
    /// Segments oldest first; the last one is the append target.
    private var segments: [Segment] = []
    private var active: StorageFile?
    /// The active segment mapped shared for appends (`append`): its file is extended (with blocks
    /// reserved) to `mappedBytes`, so an append is a copy into the page cache — the same kernel
    /// memory write(2) would fill, so it survives SIGKILL alike — instead of a system call. nil
    /// when the file system cannot reserve the space (appends then use pwrite).
    private var mapped: UnsafeMutableRawPointer?
    private var mappedBytes = 0
    /// How far the mapping's pages are faulted in writable: appends prefault the next stretch
    /// in one madvise(MADV_POPULATE_WRITE) instead of taking a page fault every 4 KiB.
    private var populatedBytes = 0
    /// Where this process's first append went: records from there on were written by this
    /// engine and are read back without recomputing their checksum (it guards against torn
    /// writes and damage between runs, which cannot have touched them).
    private var appendedFrom: DurableQueue.Position?
    /// MADV_POPULATE_WRITE is Linux 5.14+; after one refusal the pages fault in one by one.
    private var canPopulate = true
    private static let populateStretch = 256 << 10
    private var readFile: StorageFile?
    private var readFileSegment: UInt64 = .max
    private let reader: StorageSegmentReader
    private(set) var acknowledged = Position(segment: 0, offset: 0)
    private(set) var totalBytes = 0
    private var scratch: UnsafeMutableRawBufferPointer
    private var appendsSinceSync = 0
    private var cursorDurable = true
    private var setAsideRegions: Set<Position> = []
    private(set) var isClosed = false
    var pendingErrors: [QueueError] = []
    /// Records stored and not yet acknowledged: counted at open, then kept up to date.
    private(set) var pendingEvents = 0
    /// The last batch handed out by `peek` (until acknowledged or released), and how many of its
    /// events the cap removed meanwhile (not counted as dropped: that batch may still deliver them).
    private var inflight: (start: Position, end: Position)?
    private var evictedInFlight = (events: 0, bytes: 0)
    /// The upload attempts of the batch at a position (persisted in `attempts`).
    private var attemptsRecord: (start: Position, count: Int)?
    /// Size and record count of sealed segments, to report what a lost file held.
    private var manifest: StorageSegmentManifest!

    init(directory: String, configuration: DurableQueue.Configuration) throws(QueueError) {
        try configuration.validate()
        self.directory = directory
        self.configuration = configuration
        segmentLimit = configuration.effectiveSegmentBytes
        reader = StorageSegmentReader(payloadLimit: configuration.maxRecordBytes)
        scratch = .allocate(byteCount: 64 << 10, alignment: 16)
        try StorageDirectory.create(directory)
        lock = try StorageDirectoryLock(path: directory + "/LOCK")
        try recover()
    }

    deinit {
        try? unmapActive()  // a queue dropped without close keeps its exact size too
        scratch.deallocate()
    }

    /// Bytes the segment files occupy: the records, plus the reserved rest of a mapped segment.
    var diskBytes: Int { totalBytes + (mapped != nil ? mappedBytes - (segments.last?.size ?? 0) : 0) }

    private var cursorPath: String { directory + "/cursor" }
    private var attemptsPath: String { directory + "/attempts" }
    private func path(_ id: UInt64) -> String { directory + "/" + StorageSegmentName.fileName(id) }

    // MARK: Recovery

    /// Rebuilds the state from the directory: reads the cursor, deletes segments it says were fully
    /// acknowledged, repairs the last segment (the only one a crash can leave mid-write), and checks
    /// the rest, reporting damage done behind the queue's back — a missing or unreadable cursor,
    /// missing or emptied segment files, corrupt records — with what it costs (events, bytes).
    private func recover() throws(QueueError) {
        var ids = try StorageDirectory.list(directory).compactMap(StorageSegmentName.parse).sorted()
        try StorageDirectory.remove(cursorPath + ".tmp")
        manifest = StorageSegmentManifest(path: directory + "/segments")
        var cursorProblem: (reason: String, aside: String?)?
        var cursorValid = false
        do {
            if let position = try StorageCursorFile.read(path: cursorPath) {
                acknowledged = position
                cursorValid = true
            } else if !ids.isEmpty {
                cursorProblem = ("file is missing", nil)
            }
        } catch {
            guard case .badCursor(_, let reason) = error else { throw error }
            let aside = StorageDirectory.unusedPath(stem: cursorPath, suffix: ".corrupt")
            try StorageDirectory.rename(cursorPath, to: aside)
            cursorProblem = ("is unreadable (\(reason))", aside)
            acknowledged = Position(segment: 0, offset: 0)
        }
        let highest = max(ids.last ?? 0, acknowledged.segment)
        for id in ids where id < acknowledged.segment { try StorageDirectory.remove(path(id)) }
        ids.removeAll { $0 < acknowledged.segment }
        var emptied: Set<UInt64> = []
        for id in ids {
            var info = stat()
            guard stat(path(id), &info) == 0 else { throw .io(path: path(id), operation: "stat", errno: errno) }
            if info.st_size == 0 && id != ids.last {
                // Emptied behind the queue's back: keep it aside, report what it held.
                let aside = StorageDirectory.unusedPath(stem: path(id), suffix: ".corrupt")
                try StorageDirectory.rename(path(id), to: aside)
                emptied.insert(id)
                let entry = manifest.entries[id]
                let partial = acknowledged.segment == id && acknowledged.offset > headerSize
                pendingErrors.append(.segmentsLost(paths: [path(id)], reason: "was truncated to 0 bytes",
                                                   events: partial ? nil : entry?.events,
                                                   bytes: entry.map { $0.size - (partial ? acknowledged.offset : headerSize) },
                                                   setAsideAs: [aside]))
                continue
            }
            segments.append(Segment(id: id, size: Int(info.st_size)))
        }
        while !segments.isEmpty {
            if let file = try repairLastSegment() {
                active = file
                break
            }
            segments.removeLast()
        }
        if cursorValid { reportMissing(ids: segments.map(\.id), besides: emptied) }
        let fresh = active == nil
        if fresh { try startSegment(id: highest + 1) }
        totalBytes = segments.reduce(0) { $0 + $1.size }
        mapActive()
        normalizeAcknowledged()
        if fresh && !StorageDirectory.exists(cursorPath) {
            // Written at creation, so that a missing cursor later means it was lost.
            try StorageCursorFile.write(acknowledged, path: cursorPath, directory: directory, durable: configuration.fsync != .never)
        }
        let pending = try countPending()
        pendingEvents = pending.events
        if let cursorProblem {
            pendingErrors.append(.cursorLost(path: cursorPath, reason: cursorProblem.reason, resend: pending.events,
                                             bytes: pending.bytes, setAsideAs: cursorProblem.aside))
            try StorageCursorFile.write(acknowledged, path: cursorPath, directory: directory, durable: configuration.fsync != .never)
        }
        attemptsRecord = StorageAttemptsFile.read(path: attemptsPath)
    }

    /// Segments between the cursor's and the newest (as the files and the manifest know them)
    /// must all exist; those that do not are reported with what the manifest says they held.
    private func reportMissing(ids: [UInt64], besides reported: Set<UInt64>) {
        let present = Set(ids).union(reported)
        let sealedNewest = manifest.entries.keys.filter { $0 >= acknowledged.segment }.max()
        let upper = max(ids.last ?? acknowledged.segment, sealedNewest.map { $0 + 1 } ?? 0)
        guard acknowledged.segment >= 1, upper >= acknowledged.segment else { return }
        let missing = (acknowledged.segment...upper).filter { !present.contains($0) }
        guard !missing.isEmpty else { return }
        var events: Int? = 0
        var bytes: Int? = 0
        for id in missing {
            guard let entry = manifest.entries[id] else { events = nil; bytes = nil; break }
            let partial = id == acknowledged.segment && acknowledged.offset > headerSize
            if partial { events = nil }
            events = events.map { $0 + entry.events }
            bytes = bytes.map { $0 + entry.size - (partial ? acknowledged.offset : headerSize) }
        }
        pendingErrors.append(.segmentsLost(paths: missing.map(path), reason: missing.count == 1 ? "is missing" : "are missing",
                                           events: events, bytes: bytes, setAsideAs: []))
    }

    /// Counts the records from the acknowledged position to the end, checking every sealed segment
    /// (an unusable file is set aside, damaged bytes are reported and set aside as when read).
    private func countPending() throws(QueueError) -> (events: Int, bytes: Int) {
        var events = 0
        var bytes = 0
        var index = 0
        while index < segments.count {
            if index < segments.count - 1 && segments[index].id >= acknowledged.segment {
                guard try fileForReading(index) != nil else { continue }  // set aside: the list shrank
            }
            let counted = countUnacknowledged(index, reportingDamage: true)
            events += counted.events
            bytes += counted.bytes
            index += 1
        }
        readFile = nil
        readFileSegment = .max
        normalizeAcknowledged()
        return (events, bytes)
    }

    /// Checks every record of the last segment and cuts off whatever follows the last intact one
    /// (a torn write). Returns nil after setting aside a file that is no segment at all.
    private func repairLastSegment() throws(QueueError) -> StorageFile? {
        let index = segments.count - 1
        let id = segments[index].id
        let size = segments[index].size
        let file = try StorageFile(path: path(id), flags: O_RDWR)
        if size <= headerSize {
            let bytes = try file.readBytes(count: size, at: 0)
            if bytes == Array(StorageRecordFormat.segmentHeader[0..<size]) {
                // Creation was interrupted before the header was complete: nothing was stored yet.
                if size < headerSize {
                    try file.write(StorageRecordFormat.segmentHeader, at: 0)
                    segments[index].size = headerSize
                }
                return file
            }
            try setAsideFile(id, reason: "\(size) bytes, not a segment header")
            return nil
        }
        var offset = headerSize
        if !(try reader.hasValidHeader(file, segment: id, end: size)) {
            offset = try reader.resync(file, segment: id, after: -1, end: size)
            if offset >= size {
                try setAsideFile(id, reason: "no segment header and no intact record")
                return nil
            }
        }
        var validEnd = headerSize
        while offset < size {
            switch try reader.step(file, segment: id, offset: offset, end: size) {
            case .record(let length):
                offset += recordHeaderSize + length
                validEnd = offset
                segments[index].events += 1
            case .corrupt:
                offset = try reader.resync(file, segment: id, after: offset, end: size)
            }
        }
        if validEnd < size, try isZero(file, from: validEnd, to: min(size, validEnd + 4)) {
            // Space reserved for a mapped segment (see `mapped`) that the last run never wrote,
            // maybe with the payload of an append killed before it wrote the record's marker
            // (written last): that call never returned, nothing accepted is cut.
            try file.truncate(to: validEnd)
            reader.invalidate()
            segments[index].size = validEnd
        } else if validEnd < size {
            let aside = copyAside(id, file: file, from: validEnd, to: size)
            try file.truncate(to: validEnd)
            reader.invalidate()
            segments[index].size = validEnd
            pendingErrors.append(.tornTailRepaired(path: path(id), bytesRemoved: size - validEnd, setAsideAs: aside))
        }
        return file
    }

    /// Whether bytes `[from, to)` of the file are all zero.
    private func isZero(_ file: StorageFile, from: Int, to: Int) throws(QueueError) -> Bool {
        var offset = from
        while offset < to {
            let n = try file.read(into: scratch.baseAddress!, count: min(scratch.count, to - offset), at: offset)
            if n == 0 { return false }
            if UnsafeRawBufferPointer(start: scratch.baseAddress!, count: n).contains(where: { $0 != 0 }) { return false }
            offset += n
        }
        return true
    }

    // MARK: The mapped active segment

    /// Maps the active segment for appends when the file system reserves the space for it
    /// (posix_fallocate: a full disk fails here, never later inside a copy) and the reserved
    /// space fits under the disk cap (the files never occupy more than the cap).
    private func mapActive() {
        guard mapped == nil, let file = active, let last = segments.last, last.size + recordHeaderSize < segmentLimit,
              totalBytes - last.size + segmentLimit <= configuration.maxDiskBytes else { return }
        guard posix_fallocate(file.fd, 0, off_t(segmentLimit)) == 0 else {
            _ = ftruncate(file.fd, off_t(last.size))
            return
        }
        let address = mmap(nil, segmentLimit, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            _ = ftruncate(file.fd, off_t(last.size))
            return
        }
        mapped = address
        mappedBytes = segmentLimit
        populatedBytes = last.size & ~4095
    }

    private func populate(_ address: UnsafeMutableRawPointer, through end: Int) {
        let upTo = min(mappedBytes, max(end, populatedBytes + StorageEngine.populateStretch))
        if canPopulate, madvise(address + populatedBytes, upTo - populatedBytes, 23 /* MADV_POPULATE_WRITE */) != 0 {
            canPopulate = false
        }
        populatedBytes = upTo
    }

    /// Ends the mapping and gives the active file its exact size back (before it is sealed,
    /// closed, or written by pwrite beyond the mapping).
    private func unmapActive() throws(QueueError) {
        guard let address = mapped, let file = active, let last = segments.last else { return }
        munmap(address, mappedBytes)
        mapped = nil
        mappedBytes = 0
        try file.truncate(to: last.size)
    }

    private func setAsideFile(_ id: UInt64, reason: String) throws(QueueError) {
        if readFileSegment == id { readFile = nil; readFileSegment = .max }
        reader.invalidate()
        let original = path(id)
        let aside = StorageDirectory.unusedPath(stem: original, suffix: ".corrupt")
        try StorageDirectory.rename(original, to: aside)
        pendingErrors.append(.corruptFile(path: original, reason: reason, setAsideAs: aside))
    }

    /// Copies damaged bytes `[from, to)` of a segment next to it as `*.at-<offset>.corrupt` for
    /// inspection and reports them; the reader then skips them.
    private func setAsideRegion(_ id: UInt64, file: StorageFile, from: Int, to: Int, reason: String) {
        guard setAsideRegions.insert(Position(segment: id, offset: from)).inserted else { return }
        let aside = copyAside(id, file: file, from: from, to: to)
        pendingErrors.append(.corruptRegion(path: path(id), offset: from, length: to - from, reason: reason, setAsideAs: aside))
    }

    /// Copies bytes `[from, to)` of a segment to `<segment>.at-<from>.corrupt` (once) and returns that path.
    private func copyAside(_ id: UInt64, file: StorageFile, from: Int, to: Int) -> String {
        let original = path(id)
        let aside = "\(original).at-\(from).corrupt"
        if !StorageDirectory.exists(aside) {
            do {
                let copy = try StorageFile(path: aside, flags: O_WRONLY | O_CREAT | O_EXCL)
                var offset = from
                while offset < to {
                    let chunk = try file.readBytes(count: min(64 << 10, to - offset), at: offset)
                    if chunk.isEmpty { break }
                    try copy.write(chunk, at: offset - from)
                    offset += chunk.count
                }
            } catch {
                pendingErrors.append(error)
            }
        }
        return aside
    }

    // MARK: Appending

    private func startSegment(id: UInt64) throws(QueueError) {
        try unmapActive()
        let file = try StorageFile(path: path(id), flags: O_RDWR | O_CREAT | O_EXCL)
        do {
            try file.write(StorageRecordFormat.segmentHeader, at: 0)
            if configuration.fsync != .never {
                try file.sync()
                try StorageDirectory.sync(directory)
            }
        } catch {
            try? StorageDirectory.remove(path(id))
            throw error
        }
        segments.append(Segment(id: id, size: headerSize))
        totalBytes += headerSize
        active = file
        mapActive()
    }

    private func roll() throws(QueueError) {
        if configuration.fsync != .never { try active?.sync() }
        let sealed = segments[segments.count - 1]
        try startSegment(id: sealed.id + 1)
        if let error = manifest.sealed(sealed.id, size: sealed.size, events: sealed.events, live: segments.map(\.id)) {
            pendingErrors.append(error)
        }
    }

    /// Whether a record of `payload` bytes can be appended without going over the cap.
    func fits(payload: Int) -> Bool {
        guard payload <= configuration.maxRecordBytes, let last = segments.last else { return true }
        let size = recordHeaderSize + payload
        let roll = last.size + size > segmentLimit && last.size > headerSize ? headerSize : 0
        return totalBytes + size + roll <= configuration.maxDiskBytes
    }

    func append(_ payload: UnsafeRawBufferPointer) throws(QueueError) {
        guard !isClosed, let file = active else { throw .closed(path: directory) }
        let length = payload.count
        guard length <= configuration.maxRecordBytes else {
            throw .recordTooLarge(bytes: length, limit: configuration.maxRecordBytes)
        }
        let size = recordHeaderSize + length
        var target = file
        if segments[segments.count - 1].size + size > segmentLimit && segments[segments.count - 1].size > headerSize {
            try roll()
            target = active!
        }
        if totalBytes + size > configuration.maxDiskBytes {
            try makeRoom(for: size)
            target = active!
        }
        let last = segments.count - 1
        let offset = segments[last].size
        // Near the cap the reserved space would count against it: write the rest with pwrite.
        if mapped != nil && totalBytes - offset + mappedBytes > configuration.maxDiskBytes { try unmapActive() }
        if let mapped, offset + size <= mappedBytes {
            // Into the page cache directly: payload first, then the header with its marker.
            if appendedFrom == nil { appendedFrom = DurableQueue.Position(segment: segments[last].id, offset: offset) }
            if offset + size > populatedBytes { populate(mapped, through: offset + size) }
            let base = mapped + offset
            if length > 0 { (base + recordHeaderSize).copyMemory(from: payload.baseAddress!, byteCount: length) }
            StorageRecordFormat.writeHeader(to: base, payload: payload)
        } else {
            try unmapActive()  // a record larger than the mapped space: the file is written by pwrite
            if scratch.count < size {
                scratch.deallocate()
                scratch = .allocate(byteCount: max(size, scratch.count * 2), alignment: 16)
            }
            let base = scratch.baseAddress!
            StorageRecordFormat.writeHeader(to: base, payload: payload)
            if length > 0 { (base + recordHeaderSize).copyMemory(from: payload.baseAddress!, byteCount: length) }
            do {
                try target.write(UnsafeRawBufferPointer(start: base, count: size), at: offset)
            } catch {
                try? target.truncate(to: offset)  // never leave a torn record behind a live queue
                throw error
            }
        }
        segments[last].size = offset + size
        segments[last].events += 1
        totalBytes += size
        pendingEvents += 1
        switch configuration.fsync {
        case .never: break
        case .always: try target.sync()
        case .every(let n):
            appendsSinceSync += 1
            if appendsSinceSync >= n {
                appendsSinceSync = 0
                try target.sync()
            }
        }
    }

    /// Deletes the oldest segments until `size` more bytes fit under the cap, reporting how many
    /// unacknowledged events went with them. The cursor moves past a segment before it is deleted,
    /// so a crash never leaves it pointing at a file that is gone.
    private func makeRoom(for size: Int) throws(QueueError) {
        var events = 0
        var bytes = 0
        while totalBytes + size > configuration.maxDiskBytes {
            let oldest = segments[0]
            if segments.count == 1 && oldest.size <= headerSize { break }  // validate() rules this out
            let lost = countUnacknowledged(0)
            events += lost.events - lost.inFlightEvents
            bytes += lost.bytes - lost.inFlightBytes
            evictedInFlight.events += lost.inFlightEvents
            evictedInFlight.bytes += lost.inFlightBytes
            pendingEvents = max(0, pendingEvents - lost.events)
            if readFileSegment == oldest.id { readFile = nil; readFileSegment = .max }
            if segments.count == 1 { try startSegment(id: oldest.id + 1) }
            if acknowledged.segment <= oldest.id {
                acknowledged = Position(segment: segments[1].id, offset: headerSize)
                try StorageCursorFile.write(acknowledged, path: cursorPath, directory: directory, durable: configuration.fsync != .never)
            }
            try StorageDirectory.remove(path(oldest.id))
            segments.removeFirst()
            totalBytes -= oldest.size
        }
        if events > 0 {
            pendingErrors.append(.droppedOverCap(events: events, bytes: bytes, capBytes: configuration.maxDiskBytes))
        }
    }

    /// Events (and their record bytes) in segment `index` not yet acknowledged.
    /// Those before the end of the batch in flight are also counted apart.
    private func countUnacknowledged(_ index: Int, reportingDamage: Bool = false) -> (events: Int, bytes: Int, inFlightEvents: Int, inFlightBytes: Int) {
        let segment = segments[index]
        if acknowledged.segment > segment.id { return (0, 0, 0, 0) }
        var offset = acknowledged.segment == segment.id ? max(acknowledged.offset, headerSize) : headerSize
        var events = 0
        var bytes = 0
        var inFlightEvents = 0
        var inFlightBytes = 0
        do {
            guard let file = index == segments.count - 1 ? active : try StorageFile(path: path(segment.id), flags: O_RDONLY) else {
                return (0, 0, 0, 0)
            }
            while offset < segment.size {
                switch try reader.step(file, segment: segment.id, offset: offset, end: segment.size) {
                case .record(let length):
                    events += 1
                    bytes += recordHeaderSize + length
                    if let inflight, Position(segment: segment.id, offset: offset) < inflight.end {
                        inFlightEvents += 1
                        inFlightBytes += recordHeaderSize + length
                    }
                    offset += recordHeaderSize + length
                case .corrupt(let reason):
                    let next = try reader.resync(file, segment: segment.id, after: offset, end: segment.size)
                    if reportingDamage { setAsideRegion(segment.id, file: file, from: offset, to: next, reason: reason) }
                    offset = next
                }
            }
        } catch {
            pendingErrors.append(error)
        }
        return (events, bytes, inFlightEvents, inFlightBytes)
    }

    // MARK: Reading and acknowledging

    private func index(of id: UInt64) -> Int? {
        var low = 0
        var high = segments.count
        while low < high {
            let mid = (low + high) / 2
            if segments[mid].id < id { low = mid + 1 } else { high = mid }
        }
        return low < segments.count && segments[low].id == id ? low : nil
    }

    /// Moves the acknowledged position onto an existing segment: past the end of sealed segments,
    /// over deleted ones, and never beyond the data.
    private func normalizeAcknowledged() {
        while let first = segments.first {
            if acknowledged.segment < first.id {
                acknowledged = Position(segment: first.id, offset: headerSize)
            }
            guard let index = index(of: acknowledged.segment) else {
                if let next = segments.first(where: { $0.id > acknowledged.segment }) {
                    acknowledged = Position(segment: next.id, offset: headerSize)
                    continue
                }
                let last = segments[segments.count - 1]
                acknowledged = Position(segment: last.id, offset: last.size)
                return
            }
            let segment = segments[index]
            if acknowledged.offset < headerSize {
                acknowledged = Position(segment: segment.id, offset: headerSize)
            }
            if index < segments.count - 1 && acknowledged.offset >= segment.size {
                acknowledged = Position(segment: segments[index + 1].id, offset: headerSize)
                continue
            }
            if acknowledged.offset > segment.size {
                acknowledged = Position(segment: segment.id, offset: segment.size)
            }
            return
        }
    }

    /// The open file to read segment `index` from, or nil when that segment turned out to be
    /// unusable and was removed from the list (so `index` now names the next one).
    private func fileForReading(_ index: Int) throws(QueueError) -> StorageFile? {
        let segment = segments[index]
        if index == segments.count - 1 { return active }
        if readFileSegment == segment.id, let readFile { return readFile }
        readFile = nil
        readFileSegment = .max
        let file: StorageFile
        do {
            file = try StorageFile(path: path(segment.id), flags: O_RDONLY)
        } catch {
            guard case .io(_, _, let code) = error, code == ENOENT else { throw error }
            pendingErrors.append(error)  // deleted behind the queue's back
            segments.remove(at: index)
            totalBytes -= segment.size
            return nil
        }
        if !(try reader.hasValidHeader(file, segment: segment.id, end: segment.size)),
           try reader.resync(file, segment: segment.id, after: -1, end: segment.size) >= segment.size {
            try setAsideFile(segment.id, reason: "no segment header and no intact record")
            segments.remove(at: index)
            totalBytes -= segment.size
            return nil
        }
        readFile = file
        readFileSegment = segment.id
        return file
    }

    func peek(maxEvents: Int, maxBytes: Int) throws(QueueError) -> DurableQueue.Batch {
        var none: [UInt8] = []
        return try peek(maxEvents: maxEvents, maxBytes: maxBytes, reusing: &none)
    }

    /// `peek` that fills `buffer`'s storage (taken; `buffer` is left empty).
    func peek(maxEvents: Int, maxBytes: Int, reusing buffer: inout [UInt8]) throws(QueueError) -> DurableQueue.Batch {
        guard !isClosed else { throw .closed(path: directory) }
        normalizeAcknowledged()
        var start = acknowledged
        var position = start
        var bytes: [UInt8] = []
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
        var bounds = [0]
        var index = self.index(of: position.segment) ?? segments.count - 1
        reading: while bounds.count - 1 < maxEvents {
            let segment = segments[index]
            if position.offset >= segment.size {
                if index == segments.count - 1 { break }
                index += 1
                position = Position(segment: segments[index].id, offset: headerSize)
                continue
            }
            guard let file = try fileForReading(index) else {
                position = Position(segment: segments[index].id, offset: headerSize)
                continue
            }
            let verify = appendedFrom.map { position < $0 } ?? true
            switch try reader.step(file, segment: segment.id, offset: position.offset, end: segment.size, verify: verify) {
            case .record(let length):
                if bounds.count > 1 && bytes.count + length > maxBytes { break reading }
                if bytes.isEmpty { bytes.reserveCapacity(min(maxBytes, 1 << 20) + length) }
                bytes.append(contentsOf: reader.payload(at: position.offset, length: length))
                bounds.append(bytes.count)
                position = Position(segment: segment.id, offset: position.offset + recordHeaderSize + length)
            case .corrupt(let reason):
                let next = try reader.resync(file, segment: segment.id, after: position.offset, end: segment.size)
                setAsideRegion(segment.id, file: file, from: position.offset, to: next, reason: reason)
                position = Position(segment: segment.id, offset: next)
                if bounds.count == 1 {
                    // Nothing deliverable precedes the damage: skip it for good.
                    try advanceAcknowledged(to: position)
                    start = acknowledged
                    position = acknowledged
                    index = self.index(of: position.segment) ?? segments.count - 1
                }
            }
        }
        let batch = DurableQueue.Batch(start: start, end: position, bytes: bytes, bounds: bounds)
        if !batch.isEmpty {
            inflight = (start, position)
            evictedInFlight = (0, 0)
        }
        return batch
    }

    func acknowledge(_ batch: DurableQueue.Batch) throws(QueueError) -> Int {
        guard !isClosed else { throw .closed(path: directory) }
        var removed = batch.end > acknowledged ? batch.count : 0
        if let inflight, inflight.start == batch.start, inflight.end == batch.end {
            removed = batch.count - evictedInFlight.events  // those were subtracted when evicted
            self.inflight = nil
            evictedInFlight = (0, 0)
        }
        try advanceAcknowledged(to: batch.end)
        removed = min(pendingEvents, max(0, removed))
        pendingEvents -= removed
        if let record = attemptsRecord, record.start < acknowledged {
            attemptsRecord = nil
            try StorageDirectory.remove(attemptsPath)
        }
        return removed
    }

    /// The batch goes back to the queue (not delivered yet). Events the cap removed while it was
    /// out are lost now, and reported.
    func release(_ batch: DurableQueue.Batch) {
        guard let inflight, inflight.start == batch.start, inflight.end == batch.end else { return }
        self.inflight = nil
        if evictedInFlight.events > 0 {
            pendingErrors.append(.droppedOverCap(events: evictedInFlight.events, bytes: evictedInFlight.bytes, capBytes: configuration.maxDiskBytes))
        }
        evictedInFlight = (0, 0)
    }

    // MARK: Upload attempts

    func attempts(at start: Position) -> Int {
        guard let record = attemptsRecord, record.start == start else { return 0 }
        return record.count
    }

    func recordAttempts(_ count: Int, at start: Position) throws(QueueError) {
        guard !isClosed else { throw .closed(path: directory) }
        attemptsRecord = (start, count)
        try StorageAttemptsFile.write(start: start, count: count, path: attemptsPath)
    }

    private func advanceAcknowledged(to position: Position) throws(QueueError) {
        guard position > acknowledged else { return }
        acknowledged = position
        normalizeAcknowledged()
        let durable = configuration.fsync != .never
        try StorageCursorFile.write(acknowledged, path: cursorPath, directory: directory, durable: durable)
        cursorDurable = durable
        // Only now that the cursor is on disk may fully acknowledged segments go.
        while segments.count > 1 && segments[0].id < acknowledged.segment {
            let oldest = segments.removeFirst()
            totalBytes -= oldest.size
            if readFileSegment == oldest.id { readFile = nil; readFileSegment = .max }
            try StorageDirectory.remove(path(oldest.id))
        }
    }

    /// Whether any stored event is not yet acknowledged.
    var hasPendingEvents: Bool {
        // The position may still name a segment that reading has since set aside as unreadable.
        normalizeAcknowledged()
        guard let last = segments.last else { return false }
        return acknowledged < Position(segment: last.id, offset: last.size)
    }

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
