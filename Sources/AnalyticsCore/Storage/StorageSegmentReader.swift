#if canImport(Glibc)
import Glibc
#endif

/// Reads records out of segment files through one fixed-size window buffer, so memory stays flat
/// however long the queue is. Every record is checked (marker, length bound, CRC) before it is
/// handed out; damaged bytes are reported as `.corrupt` and `resync` finds the next intact record.
/// Not thread-safe: the queue calls it under its lock.
final class StorageSegmentReader {
    enum Step: Equatable {
        /// An intact record at `offset` with a payload of `length` bytes; see `payload(_:_:)`.
        case record(length: Int)
        /// No record starts here: the bytes are damaged or the file ends inside a record.
        case corrupt(reason: String)
    }

    private let window: UnsafeMutableRawBufferPointer
    private var windowSegment: UInt64 = .max
    private var windowStart = 0
    private var windowCount = 0
    /// Largest payload accepted when reading; anything larger is damage.
    let payloadLimit: Int

    init(payloadLimit: Int) {
        self.payloadLimit = payloadLimit
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

    /// Checks the record starting at `offset`; `end` is where the segment's data ends.
    /// `verify` false skips the checksum (a record this process appended, read back from the page
    /// cache it wrote; the marker and length are still checked).
    func step(_ file: StorageFile, segment: UInt64, offset: Int, end: Int, verify: Bool = true) throws(QueueError) -> Step {
        let headerSize = StorageRecordFormat.recordHeaderSize
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
        guard offset + headerSize + length <= end else { return .corrupt(reason: "file ends inside a record") }
        guard try load(file, segment: segment, offset: offset, count: headerSize + length, end: end) else {
            return .corrupt(reason: "file is shorter than expected")
        }
        base = UnsafeRawPointer(window.baseAddress!) + (offset - windowStart)
        let stored = StorageRecordFormat.load32(base, 8)
        let payload = UnsafeRawBufferPointer(start: base + headerSize, count: length)
        guard !verify || StorageRecordFormat.checksum(length: UInt32(length), payload: payload) == stored else {
            return .corrupt(reason: "checksum mismatch")
        }
        return .record(length: length)
    }

    /// The payload of the record `step` just accepted at `offset`; valid until the next call.
    func payload(at offset: Int, length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: window.baseAddress! + (offset - windowStart) + StorageRecordFormat.recordHeaderSize, count: length)
    }

    /// The offset of the first intact record after `offset`, or `end` when there is none.
    func resync(_ file: StorageFile, segment: UInt64, after offset: Int, end: Int) throws(QueueError) -> Int {
        let first = StorageRecordFormat.marker[0]
        var position = offset + 1
        while position + StorageRecordFormat.recordHeaderSize <= end {
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
            if case .record = try step(file, segment: segment, offset: candidate, end: end) { return candidate }
            position = candidate + 1
        }
        return end
    }

    /// Whether the file starts with a valid segment header.
    func hasValidHeader(_ file: StorageFile, segment: UInt64, end: Int) throws(QueueError) -> Bool {
        let size = StorageRecordFormat.segmentHeaderSize
        guard try load(file, segment: segment, offset: 0, count: size, end: end) else { return false }
        return (0..<size).allSatisfy { window[$0 + (0 - windowStart)] == StorageRecordFormat.segmentHeader[$0] }
    }
}
