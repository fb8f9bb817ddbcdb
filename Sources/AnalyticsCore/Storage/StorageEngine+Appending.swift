#if canImport(Glibc)
import Glibc
#endif

extension StorageEngine {
    // MARK: Appending

    func startSegment(id: UInt64) throws(QueueError) {
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

    func roll() throws(QueueError) {
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
            StorageRecordFormat.writeHeader(to: base, payload: payload, key: secret.key, segment: segments[last].id, offset: offset)
        } else {
            try unmapActive()  // a record larger than the mapped space: the file is written by pwrite
            if scratch.count < size {
                scratch.deallocate()
                scratch = .allocate(byteCount: max(size, scratch.count * 2), alignment: 16)
            }
            let base = scratch.baseAddress!
            StorageRecordFormat.writeHeader(to: base, payload: payload, key: secret.key, segment: segments[last].id, offset: offset)
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
    func makeRoom(for size: Int) throws(QueueError) {
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
    func countUnacknowledged(_ index: Int, reportingDamage: Bool = false) -> (events: Int, bytes: Int, inFlightEvents: Int, inFlightBytes: Int) {
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
            let header = segment.format.recordHeaderSize
            while offset < segment.size {
                switch try reader.step(file, segment: segment.id, format: segment.format, offset: offset, end: segment.size) {
                case .record(let length):
                    events += 1
                    bytes += header + length
                    if let inflight, Position(segment: segment.id, offset: offset) < inflight.end {
                        inFlightEvents += 1
                        inFlightBytes += header + length
                    }
                    offset += header + length
                case .corrupt(let reason, let forgedSize):
                    var next = try reader.resync(file, segment: segment.id, format: segment.format, after: offset, end: segment.size)
                    if let forgedSize { next = min(next, offset + forgedSize) }
                    if reportingDamage { setAsideRegion(segment.id, file: file, from: offset, to: next, reason: reason, forged: forgedSize != nil) }
                    offset = next
                }
            }
        } catch {
            pendingErrors.append(error)
        }
        return (events, bytes, inFlightEvents, inFlightBytes)
    }
}
