#if canImport(Glibc)
import Glibc
#endif

/// The old-format (version 1, CRC-checked) segments a queue held when its storage got its key:
/// `legacy` in the queue's directory, one line "id size mac" per segment, the MAC (keyed with the
/// storage's secret) over the whole file. Written once, when the key is made over a queue that has
/// only such segments (the migration); from then on an old-format segment is read only if this
/// file vouches for it, byte for byte. So a whole segment forged in the old format, where a
/// forged record in the new one would fail, is refused too.
///
/// What this cannot tell: a key that was deleted and made again over a queue that an attacker
/// rewrote in the old format in between looks like a first migration — unless the queue already
/// holds a new-format segment or a `legacy` file, in which case nothing is vouched for.
enum StorageLegacySegments {
    static let fileName = "legacy"

    struct Entry: Equatable { let size: Int; let mac: UInt64 }

    static func read(path: String) -> [UInt64: Entry] {
        guard let file = try? StorageFile(path: path, flags: O_RDONLY), let size = try? file.size(),
              let bytes = try? file.readBytes(count: min(size, 1 << 20), at: 0) else { return [:] }
        var entries: [UInt64: Entry] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let id = UInt64(fields[0]), let size = Int(fields[1]), let mac = UInt64(fields[2], radix: 16) else { continue }
            entries[id] = Entry(size: size, mac: mac)
        }
        return entries
    }

    static func write(_ entries: [UInt64: Entry], path: String, directory: String) throws(QueueError) {
        var text = ""
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) { text += "\(id) \(entry.size) \(String(entry.mac, radix: 16))\n" }
        let temporary = path + ".tmp"
        do {
            let file = try StorageFile(path: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
            try file.write(Array(text.utf8), at: 0)
            try file.sync()
        }
        try StorageDirectory.rename(temporary, to: path)
        try StorageDirectory.sync(directory)
    }

    /// The MAC of segment `id`'s first `size` bytes, read in chunks through `buffer`.
    static func mac(_ file: StorageFile, id: UInt64, size: Int, key: SipHash24, buffer: UnsafeMutableRawBufferPointer) throws(QueueError) -> UInt64 {
        var stream = SipHash24.Stream(key)
        // The third word is where a record's MAC has its length, which is below 2^32: no record
        // MAC is ever a segment's (the file is readable to whoever can write the queue).
        let words: [UInt64] = [id.littleEndian, UInt64(size).littleEndian, UInt64(0x4c45_4741_4359_0001).littleEndian]
        words.withUnsafeBytes { stream.update($0) }
        var offset = 0
        while offset < size {
            let n = try file.read(into: buffer.baseAddress!, count: min(buffer.count, size - offset), at: offset)
            guard n > 0 else { break }
            stream.update(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: n))
            offset += n
        }
        return stream.finish()
    }
}

extension StorageEngine {
    // MARK: Old-format segments

    /// Reads the format of each segment's header (a file without a valid header counts as the
    /// current format: its records are checked as such).
    func readFormats() {
        for index in segments.indices {
            guard let file = try? StorageFile(path: path(segments[index].id), flags: O_RDONLY),
                  let header = try? file.readBytes(count: headerSize, at: 0), header.count == headerSize,
                  Array(header.prefix(StorageRecordFormat.magic.count)) == StorageRecordFormat.magic,
                  let version = StorageRecordFormat.Version(rawValue: header[headerSize - 1]) else { continue }
            segments[index].format = version
        }
    }

    /// Old-format segments are read only if `legacy` vouches for them (made here when the
    /// storage's key is new and the queue holds nothing in the new format); any other is set
    /// aside (its id added to `setAside`) and reported as not written by this host. Returns false
    /// when the segment appends went to can no longer take them (old format, or set aside).
    func vouchForOldSegments(setAside: inout Set<UInt64>) throws(QueueError) -> Bool {
        let lastId = segments.last?.id
        guard segments.contains(where: { $0.format == .checksummed }) else { return true }
        let legacyPath = directory + "/" + StorageLegacySegments.fileName
        let migrating = secret.createdNow && !segments.contains { $0.format == .keyed } && !StorageDirectory.exists(legacyPath)
        var entries = StorageLegacySegments.read(path: legacyPath)
        var vouched: Set<UInt64> = []
        if migrating {
            for segment in segments where segment.format == .checksummed {
                let file = try StorageFile(path: path(segment.id), flags: O_RDONLY)
                let mac = try StorageLegacySegments.mac(file, id: segment.id, size: segment.size, key: secret.key, buffer: scratch)
                entries[segment.id] = .init(size: segment.size, mac: mac)
                vouched.insert(segment.id)
            }
            try StorageLegacySegments.write(entries, path: legacyPath, directory: directory)
        }
        var index = 0
        while index < segments.count {
            let segment = segments[index]
            guard segment.format == .checksummed, !vouched.contains(segment.id) else { index += 1; continue }
            let file = try StorageFile(path: path(segment.id), flags: O_RDONLY)
            if let entry = entries[segment.id], entry.size == segment.size,
               try StorageLegacySegments.mac(file, id: segment.id, size: segment.size, key: secret.key, buffer: scratch) == entry.mac {
                index += 1
                continue
            }
            let reason = entries[segment.id] == nil
                ? "a segment in the old format (records checked by a plain CRC) that this storage's key never vouched for"
                : "a segment in the old format that changed since this storage's key vouched for it"
            let original = path(segment.id)
            let aside = StorageDirectory.unusedPath(stem: original, suffix: ".corrupt")
            reader.invalidate()
            try StorageDirectory.rename(original, to: aside)
            pendingErrors.append(.notWrittenByHost(path: original, offset: nil, length: segment.size, reason: reason, setAsideAs: aside))
            segments.remove(at: index)
            setAside.insert(segment.id)
        }
        return segments.last?.id == lastId && segments.last?.format == .keyed
    }
}
