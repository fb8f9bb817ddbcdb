/// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit MAC, small and fast on short
/// inputs. The queue's records carry one, keyed with the storage's secret (``StorageSecret``), so
/// that bytes the host did not write fail to verify: a plain checksum anyone can recompute.
///
/// Written from the algorithm's specification; the tests check it against the specification's
/// vectors (key 00…0f, messages 00…n-1).
struct SipHash24: Sendable, Equatable {
    let k0: UInt64
    let k1: UInt64

    init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// The key as 16 bytes, read as two little-endian words.
    init(key: [UInt8]) {
        precondition(key.count == 16, "SipHash takes a 16-byte key")
        var k0: UInt64 = 0, k1: UInt64 = 0
        for i in 0..<8 {
            k0 |= UInt64(key[i]) << (8 * UInt64(i))
            k1 |= UInt64(key[8 + i]) << (8 * UInt64(i))
        }
        self.k0 = k0
        self.k1 = k1
    }

    /// The MAC of `bytes`.
    func mac(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var state = State(k0: k0, k1: k1)
        return state.finish(bytes, totalBefore: 0)
    }

    func mac(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { mac($0) } }

    /// The MAC of the message `w0 | w1 | w2 | bytes` (each word 8 bytes, little-endian), without
    /// copying it together: the words are whole blocks, so this is the same as hashing the
    /// concatenation.
    @inline(__always)
    func mac(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var state = State(k0: k0, k1: k1)
        state.compress(w0)
        state.compress(w1)
        state.compress(w2)
        return state.finish(bytes, totalBefore: 24)
    }

    /// SipHash-2-4 with its 128-bit output (the specification's variant) of `w0 | w1 | w2 | bytes`:
    /// one pass for ids that need 128 bits (``InputMessageIDs``).
    @inline(__always)
    func hash128(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var state = State(k0: k0, k1: k1)
        state.v1 ^= 0xee
        state.compress(w0)
        state.compress(w1)
        state.compress(w2)
        return state.finish128(bytes, totalBefore: 24)
    }

    /// ``hash128(_:_:_:_:)`` of `bytes` alone (the specification's vectors).
    func hash128(_ bytes: UnsafeRawBufferPointer) -> (UInt64, UInt64) {
        var state = State(k0: k0, k1: k1)
        state.v1 ^= 0xee
        return state.finish128(bytes, totalBefore: 0)
    }

    /// A MAC over a message given in pieces (a whole file read in chunks).
    struct Stream {
        private var state: State
        /// Bytes of an unfinished word, low byte first, and how many.
        private var pending: UInt64 = 0
        private var pendingCount = 0
        private var total = 0

        init(_ key: SipHash24) { state = State(k0: key.k0, k1: key.k1) }

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            total += bytes.count
            var offset = 0
            while offset < bytes.count && (pendingCount > 0 || bytes.count - offset < 8) {
                pending |= UInt64(bytes[offset]) << (8 * UInt64(pendingCount))
                pendingCount += 1
                offset += 1
                if pendingCount == 8 {
                    state.compress(pending)
                    pending = 0
                    pendingCount = 0
                }
            }
            guard let base = bytes.baseAddress else { return }
            while bytes.count - offset >= 8 {
                state.compress(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                offset += 8
            }
            while offset < bytes.count {
                pending |= UInt64(bytes[offset]) << (8 * UInt64(pendingCount))
                pendingCount += 1
                offset += 1
            }
        }

        mutating func finish() -> UInt64 {
            var tail = [UInt8](repeating: 0, count: pendingCount)
            for i in 0..<pendingCount { tail[i] = UInt8(truncatingIfNeeded: pending >> (8 * UInt64(i))) }
            return tail.withUnsafeBytes { state.finish($0, totalBefore: total - pendingCount) }
        }
    }

    private struct State {
        var v0: UInt64, v1: UInt64, v2: UInt64, v3: UInt64

        @inline(__always)
        init(k0: UInt64, k1: UInt64) {
            v0 = k0 ^ 0x736f_6d65_7073_6575  // "somepseu"
            v1 = k1 ^ 0x646f_7261_6e64_6f6d  // "dorandom"
            v2 = k0 ^ 0x6c79_6765_6e65_7261  // "lygenera"
            v3 = k1 ^ 0x7465_6462_7974_6573  // "tedbytes"
        }

        @inline(__always)
        mutating func round() {
            v0 &+= v1; v1 = (v1 << 13) | (v1 >> 51); v1 ^= v0; v0 = (v0 << 32) | (v0 >> 32)
            v2 &+= v3; v3 = (v3 << 16) | (v3 >> 48); v3 ^= v2
            v0 &+= v3; v3 = (v3 << 21) | (v3 >> 43); v3 ^= v0
            v2 &+= v1; v1 = (v1 << 17) | (v1 >> 47); v1 ^= v2; v2 = (v2 << 32) | (v2 >> 32)
        }

        /// Two compression rounds over one message word.
        @inline(__always)
        mutating func compress(_ m: UInt64) {
            v3 ^= m
            round()
            round()
            v0 ^= m
        }

        /// Hashes `bytes` (which follow `totalBefore` bytes already compressed, a multiple of 8),
        /// the final block carrying the message's length, then the four finalization rounds.
        @inline(__always)
        mutating func finish(_ bytes: UnsafeRawBufferPointer, totalBefore: Int) -> UInt64 {
            compressTail(bytes, totalBefore: totalBefore)
            v2 ^= 0xff
            round(); round(); round(); round()
            return v0 ^ v1 ^ v2 ^ v3
        }

        /// `finish` of the 128-bit variant (begun with v1 ^= 0xee): two finalizations, one per word.
        @inline(__always)
        mutating func finish128(_ bytes: UnsafeRawBufferPointer, totalBefore: Int) -> (UInt64, UInt64) {
            compressTail(bytes, totalBefore: totalBefore)
            v2 ^= 0xee
            round(); round(); round(); round()
            let low = v0 ^ v1 ^ v2 ^ v3
            v1 ^= 0xdd
            round(); round(); round(); round()
            return (low, v0 ^ v1 ^ v2 ^ v3)
        }

        /// The rest of the message and the final block carrying its length.
        @inline(__always)
        private mutating func compressTail(_ bytes: UnsafeRawBufferPointer, totalBefore: Int) {
            let count = bytes.count
            let whole = count & ~7
            var offset = 0
            if let base = bytes.baseAddress {
                while offset < whole {
                    compress(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                    offset += 8
                }
            }
            var last = UInt64(truncatingIfNeeded: totalBefore + count) << 56
            var shift: UInt64 = 0
            while offset < count {
                last |= UInt64(bytes[offset]) << shift
                shift += 8
                offset += 1
            }
            compress(last)
        }
    }
}
