#if canImport(Glibc)
import Glibc
#endif

/// Everything that can go wrong with the durable queue, each case naming the file and the reason,
/// so an operator can act on the message alone. Thrown by operations that fail, and passed to the
/// queue's error callback for problems the queue repaired or worked around on its own.
public enum QueueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process, or another queue instance, holds the directory's lock file.
    case locked(path: String, holderPID: Int32?)
    /// A system call on a queue file failed.
    case io(path: String, operation: String, errno: Int32)
    /// The configuration cannot work (for example a cap smaller than one record).
    case invalidConfiguration(reason: String)
    /// An event larger than the configured record limit was refused; nothing was written.
    case recordTooLarge(bytes: Int, limit: Int)
    /// The disk cap was reached: this many of the oldest unacknowledged events were deleted.
    case droppedOverCap(events: Int, bytes: Int, capBytes: Int)
    /// An incomplete record at the end of a segment (a write cut short by a crash, so never
    /// accepted) was cut off; its bytes were copied to `setAsideAs`.
    case tornTailRepaired(path: String, bytesRemoved: Int, setAsideAs: String)
    /// Bytes inside a segment did not form valid records; they were copied to `setAsideAs` and
    /// skipped, and every intact record around them is still delivered.
    case corruptRegion(path: String, offset: Int, length: Int, reason: String, setAsideAs: String)
    /// A whole segment file held no valid record; it was renamed to `setAsideAs`.
    case corruptFile(path: String, reason: String, setAsideAs: String)
    /// The acknowledged-position file could not be read; delivery restarts from the oldest
    /// event still on disk (duplicates, never loss).
    case badCursor(path: String, reason: String)
    /// Found at open: the cursor file is missing or unreadable (`reason`), so delivery restarts
    /// from the oldest stored event: `resend` events (`bytes` bytes) go out again, those already
    /// delivered a second time. A damaged file is kept as `setAsideAs`.
    case cursorLost(path: String, reason: String, resend: Int, bytes: Int, setAsideAs: String?)
    /// Found at open: segment files that should hold unacknowledged events are missing or emptied
    /// (`reason`). `events`/`bytes` are what they held when sealed (nil when the queue cannot
    /// know, e.g. the newest segment); emptied files are kept under `setAsideAs`.
    case segmentsLost(paths: [String], reason: String, events: Int?, bytes: Int?, setAsideAs: [String])
    /// Bytes of a segment (from `offset`; the whole file when nil) that the storage's key does
    /// not vouch for: a record whose MAC does not verify, or an old-format segment the key never
    /// saw. Not delivered; copied to (or renamed as) `setAsideAs`; every other record is delivered.
    case notWrittenByHost(path: String, offset: Int?, length: Int, reason: String, setAsideAs: String)
    /// The storage's key file was no key; it was renamed to `setAsideAs` and a new key made
    /// (records under the old one will not verify).
    case badSecret(path: String, reason: String, setAsideAs: String)
    /// The queue was closed.
    case closed(path: String)

    public var description: String {
        switch self {
        case let .locked(path, pid):
            let holder = pid.map { " (held by process \($0))" } ?? ""
            return "queue directory is in use: lock file \(path) is locked by another queue\(holder)"
        case let .io(path, operation, code):
            return "\(operation) failed for \(path): \(String(cString: strerror(code))) (errno \(code))"
        case let .invalidConfiguration(reason):
            return "invalid queue configuration: \(reason)"
        case let .recordTooLarge(bytes, limit):
            return "event of \(bytes) bytes refused: larger than the queue's record limit of \(limit) bytes"
        case let .droppedOverCap(events, bytes, cap):
            return "queue reached its disk cap of \(cap) bytes: dropped the \(events) oldest events (\(bytes) bytes)"
        case let .tornTailRepaired(path, removed, aside):
            return "\(path): cut off an incomplete record of \(removed) bytes at the end (a write interrupted by a crash: that call never returned, so no accepted event is lost); kept as \(aside)"
        case let .corruptRegion(path, offset, length, reason, aside):
            return "\(path): \(length) corrupt bytes at offset \(offset) (\(reason)) set aside as \(aside); intact records are kept"
        case let .corruptFile(path, reason, aside):
            return "\(path): not a queue segment (\(reason)); renamed to \(aside)"
        case let .badCursor(path, reason):
            return "\(path): acknowledged position unreadable (\(reason)); delivering again from the oldest stored event"
        case let .cursorLost(path, reason, resend, bytes, aside):
            let kept = aside.map { "; the damaged file is kept as \($0)" } ?? ""
            return "\(path): acknowledged position \(reason); delivering again from the oldest stored event: \(resend) events (\(bytes) bytes) will be sent, those already delivered a second time\(kept)"
        case let .segmentsLost(paths, reason, events, bytes, aside):
            let names = paths.joined(separator: ", ")
            let what: String
            if let events, let bytes {
                what = "\(events) events (\(bytes) bytes) in \(paths.count == 1 ? "it" : "them") are lost"
            } else {
                what = "the events in \(paths.count == 1 ? "it" : "them") are lost (how many is not known: it was still being written)"
            }
            let kept = aside.isEmpty ? "" : "; kept as \(aside.joined(separator: ", "))"
            return "segment file\(paths.count == 1 ? "" : "s") \(names) \(reason): \(what); the rest of the queue is delivered\(kept)"
        case let .notWrittenByHost(path, offset, length, reason, aside):
            let place = offset.map { "\(length) bytes at offset \($0)" } ?? "the whole file (\(length) bytes)"
            return "\(path): \(place) not written by this host (\(reason)); not delivered, set aside as \(aside); the rest of the queue is delivered"
        case let .badSecret(path, reason, aside):
            return "\(path): not a storage key (\(reason)); renamed to \(aside) and a new key made: records written under the old key will be reported as not written by this host"
        case let .closed(path):
            return "queue \(path) is closed"
        }
    }
}
