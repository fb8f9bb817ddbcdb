import Glibc

/// JSON text of an event, computed at most once for all the destinations that receive the same
/// unchanged event. The client attaches an empty one before fan-out; the first destination worker
/// that needs the text computes it (off the caller's thread), the others reuse it.
///
/// One allocation per event: the text is the buffer's header, its pthread mutex (see `Locked` for
/// why pthread) the one element. Copies share the buffer.
struct SharedEncoding: @unchecked Sendable {
    private final class Storage: ManagedBuffer<[UInt8]?, pthread_mutex_t> {
        deinit { _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) } }
    }

    private let storage: Storage

    static func make() -> SharedEncoding {
        let storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in nil }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_init($0, nil) }
        return SharedEncoding(storage: storage)
    }

    func bytes(_ encode: () -> [UInt8]) -> [UInt8] {
        storage.withUnsafeMutablePointers { cached, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            if let text = cached.pointee { return text }
            let made = encode()
            cached.pointee = made
            return made
        }
    }
}
