import Synchronization

/// JSON text of an event, computed at most once for all the destinations that receive the same
/// unchanged event. The client attaches an empty one before fan-out; the first destination worker
/// that needs the text computes it (off the caller's thread), the others reuse it.
final class SharedEncoding: Sendable {
    private let text = Mutex<[UInt8]?>(nil)

    func bytes(_ encode: () -> [UInt8]) -> [UInt8] {
        text.withLock { cached in
            if let cached { return cached }
            let made = encode()
            cached = made
            return made
        }
    }
}
