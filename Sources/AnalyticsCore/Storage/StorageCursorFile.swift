#if canImport(Glibc)
import Glibc
#endif
import CZlib

/// The acknowledged position, persisted in a 28-byte file: "AHQCUR" 0 1, segment (UInt64 LE),
/// offset (UInt64 LE), CRC-32 of the first 24 bytes. It is replaced by writing a temporary file and
/// renaming it over the old one, so a crash leaves either the old or the new position, never a mix.
enum StorageCursorFile {
    static let magic: [UInt8] = [0x41, 0x48, 0x51, 0x43, 0x55, 0x52, 0x00, 0x01]  // "AHQCUR" 0 1
    static let size = 28

    /// The stored position, nil when no cursor file exists yet.
    static func read(path: String) throws(QueueError) -> DurableQueue.Position? {
        let file: StorageFile
        do {
            file = try StorageFile(path: path, flags: O_RDONLY)
        } catch {
            if case .io(_, _, let code) = error, code == ENOENT { return nil }
            throw error
        }
        let bytes = try file.readBytes(count: size + 1, at: 0)
        let n = bytes.count
        guard n == size else { throw .badCursor(path: path, reason: "size is \(n) bytes, expected \(size)") }
        guard Array(bytes[0..<8]) == magic else { throw .badCursor(path: path, reason: "not a queue cursor file") }
        let (stored, crc, segment, offset) = bytes.withUnsafeBytes { raw in
            let base = raw.baseAddress!
            return (StorageRecordFormat.load32(base, 24),
                    UInt32(truncatingIfNeeded: crc32(0, base.assumingMemoryBound(to: Bytef.self), 24)),
                    UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                    UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
        }
        guard stored == crc else { throw .badCursor(path: path, reason: "checksum mismatch") }
        guard offset <= UInt64(Int.max) else { throw .badCursor(path: path, reason: "offset out of range") }
        return DurableQueue.Position(segment: segment, offset: Int(offset))
    }

    /// Atomically replaces the cursor file with `position`; with `durable`, also forces it to disk.
    static func write(_ position: DurableQueue.Position, path: String, directory: String, durable: Bool) throws(QueueError) {
        var bytes = magic
        withUnsafeBytes(of: position.segment.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(position.offset).littleEndian) { bytes.append(contentsOf: $0) }
        let crc = bytes.withUnsafeBytes { raw in
            UInt32(truncatingIfNeeded: crc32(0, raw.baseAddress!.assumingMemoryBound(to: Bytef.self), 24))
        }
        withUnsafeBytes(of: crc.littleEndian) { bytes.append(contentsOf: $0) }
        let temporary = path + ".tmp"
        do {
            let file = try StorageFile(path: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
            try file.write(bytes, at: 0)
            if durable { try file.sync() }
        }
        try StorageDirectory.rename(temporary, to: path)
        if durable { try StorageDirectory.sync(directory) }
    }
}

/// How many upload attempts the batch starting at a position has had, so that `X-Retry-Count`
/// goes on counting across runs. One text line "segment offset count", replaced by rename; a
/// missing or unreadable file means no attempt yet (the count restarts at 0, nothing else is lost).
enum StorageAttemptsFile {
    static func read(path: String) -> (start: DurableQueue.Position, count: Int)? {
        guard let file = try? StorageFile(path: path, flags: O_RDONLY),
              let bytes = try? file.readBytes(count: 80, at: 0) else { return nil }
        let fields = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 3, let segment = UInt64(fields[0]), let offset = Int(fields[1]), let count = Int(fields[2]),
              offset >= 0, count >= 0 else { return nil }
        return (DurableQueue.Position(segment: segment, offset: offset), count)
    }

    static func write(start: DurableQueue.Position, count: Int, path: String) throws(QueueError) {
        let temporary = path + ".tmp"
        do {
            let file = try StorageFile(path: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
            try file.write(Array("\(start.segment) \(start.offset) \(count)\n".utf8), at: 0)
        }
        try StorageDirectory.rename(temporary, to: path)
    }
}
