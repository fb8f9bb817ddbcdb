#if canImport(Glibc)
import Glibc
#endif

extension StorageEngine {
    // MARK: Recovery

    /// Rebuilds the state from the directory: reads the cursor, deletes segments it says were fully
    /// acknowledged, repairs the last segment (the only one a crash can leave mid-write), and checks
    /// the rest, reporting damage done behind the queue's back — a missing or unreadable cursor,
    /// missing or emptied segment files, corrupt records — with what it costs (events, bytes).
    func recover() throws(QueueError) {
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
        readFormats()
        while !segments.isEmpty {
            if let file = try repairLastSegment() {
                active = file
                break
            }
            segments.removeLast()
        }
        // Appends go to a new segment when the last one is in the old format or was set aside.
        if !(try vouchForOldSegments(setAside: &emptied)) { active = nil }
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
    func reportMissing(ids: [UInt64], besides reported: Set<UInt64>) {
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
    func countPending() throws(QueueError) -> (events: Int, bytes: Int) {
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
    func repairLastSegment() throws(QueueError) -> StorageFile? {
        let index = segments.count - 1
        let id = segments[index].id
        let size = segments[index].size
        let file = try StorageFile(path: path(id), flags: O_RDWR)
        let format = segments[index].format
        if size <= headerSize {
            let bytes = try file.readBytes(count: size, at: 0)
            if bytes == Array(StorageRecordFormat.segmentHeader(format)[0..<size]) {
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
        if try reader.format(file, segment: id, end: size) == nil {
            offset = try reader.resync(file, segment: id, format: format, after: -1, end: size)
            if offset >= size {
                try setAsideFile(id, reason: "no segment header and no intact record")
                return nil
            }
        }
        var validEnd = headerSize
        // Up to here the bytes are intact records or whole records reported as not written by
        // this host (those at the end are cut off with the tail, already copied aside).
        var reportedUpTo = headerSize
        while offset < size {
            switch try reader.step(file, segment: id, format: format, offset: offset, end: size) {
            case .record(let length):
                offset += format.recordHeaderSize + length
                validEnd = offset
                reportedUpTo = offset
                segments[index].events += 1
            case .corrupt(let reason, let forgedSize):
                var next = try reader.resync(file, segment: id, format: format, after: offset, end: size)
                if let forgedSize {
                    next = min(next, offset + forgedSize)
                    setAsideRegion(id, file: file, from: offset, to: next, reason: reason, forged: true)
                    if reportedUpTo == offset { reportedUpTo = next }
                }
                offset = next
            }
        }
        let zeroTail = reportedUpTo < size ? try isZero(file, from: reportedUpTo, to: min(size, reportedUpTo + 4)) : true
        if validEnd < size, zeroTail {
            // Space reserved for a mapped segment (see `mapped`) that the last run never wrote,
            // maybe with the payload of an append killed before it wrote the record's marker
            // (written last): that call never returned, nothing accepted is cut.
            try file.truncate(to: validEnd)
            reader.invalidate()
            segments[index].size = validEnd
        } else if validEnd < size {
            let aside = copyAside(id, file: file, from: reportedUpTo, to: size)
            try file.truncate(to: validEnd)
            reader.invalidate()
            segments[index].size = validEnd
            pendingErrors.append(.tornTailRepaired(path: path(id), bytesRemoved: size - reportedUpTo, setAsideAs: aside))
        }
        return file
    }

    /// Whether bytes `[from, to)` of the file are all zero.
    func isZero(_ file: StorageFile, from: Int, to: Int) throws(QueueError) -> Bool {
        var offset = from
        while offset < to {
            let n = try file.read(into: scratch.baseAddress!, count: min(scratch.count, to - offset), at: offset)
            if n == 0 { return false }
            if UnsafeRawBufferPointer(start: scratch.baseAddress!, count: n).contains(where: { $0 != 0 }) { return false }
            offset += n
        }
        return true
    }
}
