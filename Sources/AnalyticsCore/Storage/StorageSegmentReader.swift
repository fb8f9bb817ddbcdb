#if canImport(Glibc)
import Glibc
#endif

/// Reads records out of segment files through one fixed-size window buffer, so memory stays flat
/// however long the queue is. Every record is checked (marker, length bound, then the keyed MAC,
/// or the CRC in a version 1 segment) before it is handed out; damaged bytes are reported as
/// `.corrupt` and `resync` finds the next intact record.
/// Not thread-safe: the queue calls it under its lock.
final class StorageSegmentReader {
    enum Step: Equatable {
        /// An intact record at `offset` with a payload of `length` bytes; see `payload(_:_:)`.
        case record(length: Int)
        /// No record starts here: the bytes are damaged or the file ends inside a record.
        /// `forgedSize`: a whole record (header and payload, this many bytes) whose MAC does not
        /// verify with the storage's key.
        case corrupt(reason: String, forgedSize: Int? = nil)
    }

    static let forgedReason = "its MAC does not verify with this storage's key: forged, or damaged since it was written"

    private let window: UnsafeMutableRawBufferPointer
    private var windowSegment: UInt64 = .max
    private var windowStart = 0
    private var windowCount = 0
    /// Largest payload accepted when reading; anything larger is damage.
    let payloadLimit: Int

    /// The storage's key, which version 2 records' MACs are checked with.
    let key: SipHash24

    init(payloadLimit: Int, key: SipHash24) {
        self.payloadLimit = payloadLimit
        self.key = key
        let capacity = max(1 << 20, payloadLimit + StorageRecordFormat.recordHeaderSize)
        window = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { window.deallocate() }

    /// Forgets cached bytes (the file was deleted, renamed or truncated).
    func invalidate() { windowSegment = .max; windowCount = 0 }

    /// Makes `[offset, offset + count)` of the segment available in the window. Returns false when
    /// the file is shorter than that.
    private func load(_ file: StorageFile, segment: UInt64, offset: Int, count: Int, end: Int) throws(QueueError) -> Bool {
        if windowSegment == segment && offset >= windowStart && offset + count <= windowStart + windowCount { return true }
        let want = min(window.count, end - offset)
        guard want >= count else { return false }
        windowSegment = segment
        windowStart = offset
        windowCount = 0
        windowCount = try file.read(into: window.baseAddress!, count: want, at: offset)
        return windowCount >= count
    }

    /// Checks the record starting at `offset` of a segment in `format`; `end` is where the
    /// segment's data ends. `verify` false skips the MAC (a record this process appended, read
    /// back from the page cache it wrote; the marker and length are still checked).
    func step(_ file: StorageFile, segment: UInt64, format: StorageRecordFormat.Version, offset: Int, end: Int,
              verify: Bool = true) throws(QueueError) -> Step {
        let headerSize = format.recordHeaderSize
        guard offset + headerSize <= end else { return .corrupt(reason: "file ends inside a record header") }
        guard try load(file, segment: segment, offset: offset, count: headerSize, end: end) else {
            return .corrupt(reason: "file is shorter than expected")
        }
        var base = UnsafeRawPointer(window.baseAddress!) + (offset - windowStart)
        guard StorageRecordFormat.load32(base, 0) == StorageRecordFormat.markerValue else {
            return .corrupt(reason: "no record marker")
        }
        let length = Int(StorageRecordFormat.load32(base, 4))
        guard length <= payloadLimit else { return .corrupt(reason: "record length \(length) exceeds the limit of \(payloadLimit)") }
        guard offset + headerSize + length <= end else {
            return try oldFormatRecord(file, segment: segment, format: format, offset: offset, length: length, end: end)
                ?? .corrupt(reason: "file ends inside a record")
        }
        guard try load(file, segment: segment, offset: offset, count: headerSize + length, end: end) else {
            return .corrupt(reason: "file is shorter than expected")
        }
        guard verify else { return .record(length: length) }
        base = UnsafeRawPointer(window.baseAddress!) + (offset - windowStart)
        let payload = UnsafeRawBufferPointer(start: base + headerSize, count: length)
        switch format {
        case .keyed:
            guard StorageRecordFormat.mac(key, segment: segment, offset: offset, payload: payload) == StorageRecordFormat.load64(base, 8) else {
                return try oldFormatRecord(file, segment: segment, format: format, offset: offset, length: length, end: end)
                    ?? .corrupt(reason: Self.forgedReason, forgedSize: headerSize + length)
            }
        case .checksummed:
            guard StorageRecordFormat.checksum(length: UInt32(length), payload: payload) == StorageRecordFormat.load32(base, 8) else {
                return .corrupt(reason: "checksum mismatch")
            }
        }
        return .record(length: length)
    }

    /// A whole record in the old (CRC) format where a keyed segment has one that does not verify:
    /// this host writes only keyed records into keyed segments, so it was put there by something
    /// else. nil when there is none (or the segment is in the old format anyway).
    private func oldFormatRecord(_ file: StorageFile, segment: UInt64, format: StorageRecordFormat.Version, offset: Int, length: Int,
                                 end: Int) throws(QueueError) -> Step? {
        let headerSize = StorageRecordFormat.Version.checksummed.recordHeaderSize
        guard format == .keyed, offset + headerSize + length <= end,
              try load(file, segment: segment, offset: offset, count: headerSize + length, end: end) else { return nil }
        let base = UnsafeRawPointer(window.baseAddress!) + (offset - windowStart)
        let payload = UnsafeRawBufferPointer(start: base + headerSize, count: length)
        guard StorageRecordFormat.checksum(length: UInt32(length), payload: payload) == StorageRecordFormat.load32(base, 8) else { return nil }
        return .corrupt(reason: "a record in the old format (a plain CRC) inside a segment of the keyed format",
                        forgedSize: headerSize + length)
    }

    /// The payload of the record `step` just accepted at `offset`; valid until the next call.
    func payload(at offset: Int, length: Int, format: StorageRecordFormat.Version) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: window.baseAddress! + (offset - windowStart) + format.recordHeaderSize, count: length)
    }

    /// The offset of the first intact record after `offset`, or `end` when there is none.
    func resync(_ file: StorageFile, segment: UInt64, format: StorageRecordFormat.Version, after offset: Int, end: Int) throws(QueueError) -> Int {
        let first = StorageRecordFormat.marker[0]
        var position = offset + 1
        while position + format.recordHeaderSize <= end {
            if !(windowSegment == segment && position >= windowStart && position < windowStart + windowCount) {
                windowSegment = segment
                windowStart = position
                windowCount = 0
                windowCount = try file.read(into: window.baseAddress!, count: min(window.count, end - position), at: position)
                if windowCount == 0 { return end }
            }
            let from = position - windowStart
            let found = memchr(window.baseAddress! + from, Int32(first), windowCount - from)
            guard let found else {
                position = windowStart + windowCount
                continue
            }
            let candidate = windowStart + (UnsafeRawPointer(found) - UnsafeRawPointer(window.baseAddress!))
            if case .record = try step(file, segment: segment, format: format, offset: candidate, end: end) { return candidate }
            position = candidate + 1
        }
        return end
    }

    /// The format the file's segment header names, nil when it has no valid header.
    func format(_ file: StorageFile, segment: UInt64, end: Int) throws(QueueError) -> StorageRecordFormat.Version? {
        let size = StorageRecordFormat.segmentHeaderSize
        guard try load(file, segment: segment, offset: 0, count: size, end: end) else { return nil }
        let magic = StorageRecordFormat.magic
        guard (0..<magic.count).allSatisfy({ window[$0 - windowStart] == magic[$0] }) else { return nil }
        return StorageRecordFormat.Version(rawValue: window[magic.count - windowStart])
    }
}
