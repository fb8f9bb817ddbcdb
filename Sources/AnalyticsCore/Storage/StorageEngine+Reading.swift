#if canImport(Glibc)
import Glibc
#endif

extension StorageEngine {
    // MARK: Reading and acknowledging

    func index(of id: UInt64) -> Int? {
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
    func normalizeAcknowledged() {
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
    func fileForReading(_ index: Int) throws(QueueError) -> StorageFile? {
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
        if try reader.format(file, segment: segment.id, end: segment.size) == nil,
           try reader.resync(file, segment: segment.id, format: segment.format, after: -1, end: segment.size) >= segment.size {
            try setAsideFile(segment.id, reason: "no segment header and no intact record")
            segments.remove(at: index)
            totalBytes -= segment.size
            return nil
        }
        readFile = file
        readFileSegment = segment.id
        return file
    }

    func peek(maxEvents: Int, maxBytes: Int, from: Position? = nil) throws(QueueError) -> DurableQueue.Batch {
        var none: [UInt8] = []
        return try peek(maxEvents: maxEvents, maxBytes: maxBytes, reusing: &none, from: from)
    }

    /// `peek` that fills `buffer`'s storage (taken; `buffer` is left empty). `from`: a position
    /// after the acknowledged one where an earlier peek ended (a reader that holds events it has
    /// not acknowledged yet reads on from there); one no longer on disk reads from the
    /// acknowledged position instead, which the batch's `start` then says.
    func peek(maxEvents: Int, maxBytes: Int, reusing buffer: inout [UInt8], from: Position? = nil) throws(QueueError) -> DurableQueue.Batch {
        guard !isClosed else { throw .closed(path: directory) }
        normalizeAcknowledged()
        var start = acknowledged
        if let from, from > acknowledged, let i = index(of: from.segment), from.offset <= segments[i].size {
            start = from
        }
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
            switch try reader.step(file, segment: segment.id, format: segment.format, offset: position.offset, end: segment.size, verify: verify) {
            case .record(let length):
                if bounds.count > 1 && bytes.count + length > maxBytes { break reading }
                if bytes.isEmpty { bytes.reserveCapacity(min(maxBytes, 1 << 20) + length) }
                bytes.append(contentsOf: reader.payload(at: position.offset, length: length, format: segment.format))
                bounds.append(bytes.count)
                position = Position(segment: segment.id, offset: position.offset + segment.format.recordHeaderSize + length)
            case .corrupt(let reason, let forgedSize):
                var next = try reader.resync(file, segment: segment.id, format: segment.format, after: position.offset, end: segment.size)
                if let forgedSize { next = min(next, position.offset + forgedSize) }
                setAsideRegion(segment.id, file: file, from: position.offset, to: next, reason: reason, forged: forgedSize != nil)
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

    func advanceAcknowledged(to position: Position) throws(QueueError) {
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
}
