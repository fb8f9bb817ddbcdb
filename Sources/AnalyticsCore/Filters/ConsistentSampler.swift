/// The deterministic choice behind `sample_event` with a `path`: whether a given value (a user id,
/// usually) is inside a sample of `percent`.
///
/// The function, fixed so that every run, process and machine agrees:
/// 1. `text` = the value's compact JSON text as UTF-8, numbers written from their value as
///    JavaScript does (so `"42"` and `42` differ, `1.50` and `1.5` do not); a missing value
///    (no member at the path) is the empty text, so every event without one gets the same answer;
/// 2. `h` = 64-bit FNV-1a over those bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3);
/// 3. `h` is passed through the 64-bit avalanche finalizer of MurmurHash3 (`h ^= h >> 33;
///    h *= 0xff51afd7ed558ccd; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33`), because
///    FNV alone spreads near-identical ids (`user-1`, `user-2`) poorly over its top bits;
/// 4. `u` = (h >> 11) / 2^53, uniform in [0, 1);
/// 5. the event is kept when `u < percent`.
///
/// So the same value always gets the same answer, the kept share converges to `percent`, and a
/// larger percent keeps a superset of what a smaller one keeps. Swift's `Hasher` is unusable here:
/// it is seeded randomly per process.
package enum ConsistentSampler {
    /// The position of `value` in [0, 1).
    package static func unitValue(of value: JSON?) -> Double {
        unitValue(ofUTF8: value?.javaScriptTextBytes() ?? [])
    }

    static func unitValue(ofUTF8 bytes: [UInt8]) -> Double {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01b3
        }
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h = h &* 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return Double(h >> 11) * 0x1p-53
    }

    /// True when `value` falls inside a sample of `percent` (a fraction: 0.25 keeps a quarter).
    package static func keeps(_ value: JSON?, percent: Double) -> Bool {
        if percent <= 0 { return false }
        if percent >= 1 { return true }
        return unitValue(of: value) < percent
    }
}
