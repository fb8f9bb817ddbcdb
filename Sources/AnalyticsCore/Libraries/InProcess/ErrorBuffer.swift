import CAnalyticsABI

/// A host-owned `char err[]` passed to a library's fallible calls. One per instance: calls on an
/// instance are serialized, so the buffer is reused for every call without allocating.
final class ErrorBuffer: @unchecked Sendable {
    /// Bytes the library may write (one more is kept for a terminating NUL it may forget).
    let capacity = max(512, Int(AH_ERROR_CAPACITY_MIN))
    let base: UnsafeMutablePointer<CChar>

    init() {
        base = .allocate(capacity: capacity + 1)
        base.initialize(repeating: 0, count: capacity + 1)
    }

    deinit { base.deallocate() }

    @inline(__always) func clear() { base[0] = 0 }

    /// The text the library wrote (invalid UTF-8 is repaired, never trusted).
    var message: String {
        base[capacity] = 0
        return String(cString: base)
    }
}
