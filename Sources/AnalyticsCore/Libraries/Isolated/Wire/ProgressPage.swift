import Foundation
import Glibc

/// A page of memory shared with one runner (a deleted file in /dev/shm, mapped by both, fd 5 of
/// the runner): the runner stores which batch and which item of it it is calling before each
/// call, so when it dies or hangs the host knows exactly which event it was processing even though
/// results travel in batches. Word 0: the batch's sequence number; word 1: the item's index; from
/// byte 16, one status byte per item of the batch, stored when its call returned — so the items
/// the runner finished before it died count as done (with their status) and are not sent again.
final class ProgressPage: @unchecked Sendable {
    static let runnerFd: Int32 = 5
    let fd: Int32
    private let words: UnsafeMutablePointer<UInt64>

    init?() {
        let directories = ["/dev/shm", NSTemporaryDirectory()]
        var made: Int32 = -1
        for directory in directories {
            var template = Array((directory + "/ah-progress-XXXXXX").utf8CString)
            let fd = mkstemp(&template)
            if fd >= 0 {
                unlink(template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
                made = fd
                break
            }
        }
        guard made >= 0 else { return nil }
        // Never 0...5 itself (the runner's dup2 onto 5 must clear close-on-exec), always close-on-exec here.
        let high = fcntl(made, F_DUPFD_CLOEXEC, 10)
        close(made)
        guard high >= 0, ftruncate(high, 4096) == 0,
              let mapped = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, high, 0), mapped != MAP_FAILED else {
            if high >= 0 { close(high) }
            return nil
        }
        fd = high
        words = mapped.assumingMemoryBound(to: UInt64.self)
        words[0] = UInt64.max
        words[1] = 0
    }

    deinit {
        munmap(words, 4096)
        close(fd)
    }

    /// Most items of a batch the page has status bytes for.
    static let maxItems = 4096 - 16

    /// The item being called in batch `sequence`, or nil when the runner had not started that batch.
    func item(inBatch sequence: UInt64) -> Int? {
        words[0] == sequence ? Int(words[1]) : nil
    }

    /// The status the runner stored for item `index` of the current batch (only for items before
    /// the one `item(inBatch:)` names).
    func status(ofItem index: Int) -> UInt8 {
        UnsafeMutableRawPointer(words).load(fromByteOffset: 16 + index, as: UInt8.self)
    }

    /// The runner's side: maps fd 5 when the host gave one.
    static func mapInRunner() -> UnsafeMutablePointer<UInt64>? {
        var st = stat()
        guard fstat(runnerFd, &st) == 0, st.st_size >= 16,
              let mapped = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, runnerFd, 0), mapped != MAP_FAILED else { return nil }
        return mapped.assumingMemoryBound(to: UInt64.self)
    }
}
