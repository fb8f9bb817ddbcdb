import Glibc

/// Random version-4 UUID text for `messageId` and `anonymousId` (and ``InputMessageIDs``'
/// derived ones for `run`).
///
/// The bits come from xoshiro256** seeded once from the system generator: asking the kernel for
/// randomness on every event cost more than the rest of the call. 122 random bits per id keep
/// collisions out of reach.
///
/// `fork()` copies the generator's state into the child, which would then repeat the parent's
/// ids. A `pthread_atfork` handler reseeds the child from the system generator; it also holds the
/// generator's lock across the fork, so a child can never inherit it locked by a thread that no
/// longer exists there.
package enum MessageID {
    package static func make() -> String {
        let (a0, b0) = randomWords()
        return uuid(a0, b0, version: 4)
    }

    /// 128 bits as UUID text (RFC 9562): `version` in its nibble, the variant bits 10.
    static func uuid(_ a0: UInt64, _ b0: UInt64, version: UInt64) -> String {
        let a = (a0 & 0xFFFF_FFFF_FFFF_0FFF) | (version & 0xF) << 12
        let b = (b0 & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let hex: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 36) { buf in
            var o = 0
            for i in 0..<32 {
                if i == 8 || i == 12 || i == 16 || i == 20 { buf[o] = 45; o += 1 }
                let word = i < 16 ? a : b
                let nibble = Int((word >> UInt64(60 - (i % 16) * 4)) & 0xF)
                buf[o] = hex.utf8Start[nibble]
                o += 1
            }
            return 36
        }
    }

    /// The next 128 random bits of this process (no allocation: usable right after `fork()`).
    static func randomWords() -> (UInt64, UInt64) {
        let g = ForkSafeGenerator.shared
        pthread_mutex_lock(g.lock)
        defer { pthread_mutex_unlock(g.lock) }
        return (g.state.pointee.next(), g.state.pointee.next())
    }
}

/// `analytics-host run`'s messageIds for input lines that carry none: derived from the input,
/// so running the same input again gives the same ids, and the vendors that deduplicate on the
/// messageId (Segment, Amplitude's insert_id, Mixpanel's $insert_id, PostHog's uuid) count a
/// re-run once instead of twice.
///
/// Line n's id is a 128-bit hash chained over every line read so far, blank and rejected lines
/// included: the state after line n is SipHash-2-4's 128-bit output, keyed by the state after
/// line n-1, over n and the line's bytes (a line over the size limit, never held, counts by its
/// length). So the same bytes give the same ids on every run, whatever the file is called or
/// whether they come through a pipe; identical lines at different places get different ids (they
/// are different events); lines appended to a file leave the ids of the earlier lines as they
/// were; inputs that differ anywhere before line n give line n different ids. Written as a
/// version-8 UUID (RFC 9562's version for ids of one's own design): 36 characters of hex digits
/// and dashes, which every vendor's id field takes.
package struct InputMessageIDs: Sendable {
    private var state = SipHash24(k0: 0x6e61_6c79_7469_6361, k1: 0x312d_7473_6f68_2d73)  // "analytics-host-1"
    /// Lines read so far.
    package private(set) var lines = 0

    package init() {}

    /// Takes in the next line's bytes (without its newline).
    package mutating func advance(line bytes: UnsafeRawBufferPointer) {
        advance(kind: 0, bytes)
    }

    /// Takes in a line that was skipped unread (over the size limit): its length stands for it.
    package mutating func advance(skippedLineOf byteCount: Int) {
        advance(kind: 1 | UInt64(byteCount) << 1, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    private mutating func advance(kind: UInt64, _ bytes: UnsafeRawBufferPointer) {
        lines += 1
        let n = UInt64(lines)
        let (k0, k1) = state.hash128(n, kind, 0, bytes)
        state = SipHash24(k0: k0, k1: k1)
    }

    /// The messageId of the last line taken in.
    package var current: String { MessageID.uuid(state.k0, state.k1, version: 8) }
}

/// The process's generator: state and lock at fixed addresses that the fork handlers (plain C
/// functions) reach through `shared`.
final class ForkSafeGenerator: @unchecked Sendable {
    let lock: UnsafeMutablePointer<pthread_mutex_t>
    let state: UnsafeMutablePointer<Xoshiro256>

    /// Created (and the fork handlers registered) on first use.
    static let shared: ForkSafeGenerator = {
        let g = ForkSafeGenerator()
        pthread_atfork(
            { pthread_mutex_lock(ForkSafeGenerator.shared.lock) },
            { pthread_mutex_unlock(ForkSafeGenerator.shared.lock) },
            {
                let g = ForkSafeGenerator.shared
                g.state.pointee = Xoshiro256()
                pthread_mutex_unlock(g.lock)
            })
        return g
    }()

    private init() {
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        state = .allocate(capacity: 1)
        state.initialize(to: Xoshiro256())
    }
}

/// xoshiro256** (Blackman & Vigna): small, fast, statistically strong; not for secrets.
struct Xoshiro256: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init() {
        var g = SystemRandomNumberGenerator()
        s = (g.next(), g.next(), g.next(), g.next())
        if s == (0, 0, 0, 0) { s.0 = 1 }
    }

    mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
