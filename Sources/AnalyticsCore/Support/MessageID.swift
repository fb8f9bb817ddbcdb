import Glibc

/// Random version-4 UUID text for `messageId` and `anonymousId`.
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
        let a = (a0 & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
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
