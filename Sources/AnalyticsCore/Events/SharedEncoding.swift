import Glibc

/// JSON text of an event, computed at most once for all the destinations that receive the same
/// unchanged event. The client attaches an empty one before fan-out; the first destination worker
/// that needs the text computes it (off the caller's thread), the others reuse it.
///
/// One allocation per event: the text is the buffer's header, its pthread mutex (see `Locked` for
/// why pthread) the one element. Copies share the buffer.
struct SharedEncoding: @unchecked Sendable {
    /// The text once computed, and what it can be derived from until then: an earlier version of
    /// the payload with its text (an event a destination filter edited), so that only the
    /// changed members are written (`JSONObject.serializedBytes(derivedFrom:text:)`).
    private struct State {
        var text: [UInt8]?
        var base: (payload: JSONObject, text: [UInt8])?
    }

    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit { _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) } }
    }

    private let storage: Storage

    static func make() -> SharedEncoding { make(State()) }

    /// An encoding for an edited copy of `payload`, whose text is `text`.
    static func make(derivedFrom payload: JSONObject, text: [UInt8]) -> SharedEncoding {
        make(State(text: nil, base: (payload, text)))
    }

    private static func make(_ state: State) -> SharedEncoding {
        let storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in state }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_init($0, nil) }
        return SharedEncoding(storage: storage)
    }

    /// The text of `payload` (every sharer holds the same payload), computed on first use.
    func bytes(of payload: JSONObject) -> [UInt8] {
        storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            if let text = state.pointee.text { return text }
            let made: [UInt8]
            if let base = state.pointee.base {
                made = payload.serializedBytes(derivedFrom: base.payload, text: base.text)
                state.pointee.base = nil
            } else {
                made = payload.serializedBytes()
            }
            state.pointee.text = made
            return made
        }
    }

    /// The text if some sharer already computed it.
    var computedText: [UInt8]? {
        storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return state.pointee.text
        }
    }
}
