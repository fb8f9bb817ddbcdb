#if canImport(Glibc)
import Glibc
#endif

/// What each sealed segment held — its size and number of records — appended as one line
/// "id size events" to `segments` when the queue moves on to a new segment. Only read at open: it
/// is how a segment file that went missing or was emptied behind the queue's back is reported as
/// "N events (B bytes) lost" rather than an unknown amount. Advisory: a lost or damaged manifest
/// only makes such a report less precise. Compacted (rewritten with the live segments only) when
/// it grows past a few hundred lines.
final class StorageSegmentManifest {
    struct Entry: Equatable { let size: Int; let events: Int }

    let path: String
    private(set) var entries: [UInt64: Entry] = [:]
    private var lines = 0

    init(path: String) {
        self.path = path
        guard let file = try? StorageFile(path: path, flags: O_RDONLY), let size = try? file.size(),
              let bytes = try? file.readBytes(count: min(size, 1 << 20), at: 0) else { return }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let id = UInt64(fields[0]), let size = Int(fields[1]), let events = Int(fields[2]) else { continue }
            entries[id] = Entry(size: size, events: events)
            lines += 1
        }
    }

    /// Records a sealed segment. Failures are returned to be reported, never thrown: the queue
    /// works without the manifest.
    func sealed(_ id: UInt64, size: Int, events: Int, live: [UInt64]) -> QueueError? {
        entries[id] = Entry(size: size, events: events)
        do {
            if lines >= 256 {
                let keep = Set(live)
                entries = entries.filter { keep.contains($0.key) }
                var text = ""
                for (id, entry) in entries.sorted(by: { $0.key < $1.key }) { text += "\(id) \(entry.size) \(entry.events)\n" }
                let temporary = path + ".tmp"
                do {
                    let file = try StorageFile(path: temporary, flags: O_WRONLY | O_CREAT | O_TRUNC)
                    try file.write(Array(text.utf8), at: 0)
                }
                try StorageDirectory.rename(temporary, to: path)
                lines = entries.count
            } else {
                let file = try StorageFile(path: path, flags: O_WRONLY | O_CREAT | O_APPEND)
                let line = Array("\(id) \(size) \(events)\n".utf8)
                try line.withUnsafeBytes { raw in
                    Result { () throws(QueueError) in
                        guard Glibc.write(file.fd, raw.baseAddress, raw.count) == raw.count else {
                            throw .io(path: path, operation: "write", errno: errno)
                        }
                    }
                }.get()
                lines += 1
            }
            return nil
        } catch {
            return error
        }
    }
}
