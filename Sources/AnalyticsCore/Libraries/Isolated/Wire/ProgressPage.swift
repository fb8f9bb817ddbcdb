import Foundation
import Glibc

/// A page of memory shared with one runner (a deleted file in /dev/shm, mapped by both, fd 5 of
/// the runner): the runner stores which batch and which item of it it is calling before each
/// call, so when it dies or hangs the host knows exactly which event it was processing even though
/// results travel in batches. Word 0: the batch's sequence number; word 1: the item's index; from
/// byte 16, one status byte per item of the batch, stored when its call returned — so the items
/// the runner finished before it died count as done (with their status) and are not sent again.
/// The last 64 bytes are the runner's record of the calls its system-call filter refused.
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

    /// Where the runner's SIGSYS handler notes the system calls its filter refused (one bit per
    /// call number, `refusedBits` of them); the same values as the sandbox's AH_REFUSED_*.
    static let refusedOffset = 4032, refusedBits = 512

    /// Most items of a batch the page has status bytes for.
    static let maxItems = refusedOffset - 16

    /// The system-call numbers the runner's filter refused so far (set bits; the runner only sets
    /// them, so a number once seen stays).
    func refusedCalls() -> [Int] {
        var numbers: [Int] = []
        let base = UnsafeMutableRawPointer(words) + Self.refusedOffset
        for word in 0..<(Self.refusedBits / 64) {
            let bits = base.load(fromByteOffset: word * 8, as: UInt64.self)
            guard bits != 0 else { continue }
            for bit in 0..<64 where bits & (1 << UInt64(bit)) != 0 { numbers.append(word * 64 + bit) }
        }
        return numbers
    }

    /// The item being called in batch `sequence`, or nil when the runner had not started that batch.
    func item(inBatch sequence: UInt64) -> Int? {
        // The runner writes this page: a value beyond any batch is as good as none.
        words[0] == sequence ? Int(exactly: words[1] & 0xFFFF_FFFF) : nil
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
