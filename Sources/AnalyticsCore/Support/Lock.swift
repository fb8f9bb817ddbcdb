import Glibc

/// A value guarded by a mutex: the one locking primitive of the host.
///
/// A pthread mutex rather than the standard library's `Mutex`: on Linux both are a futex with the
/// same uncontended fast path, but only the pthread one is understood by ThreadSanitizer, which
/// would otherwise report every access this lock orders as a race (`make tsan`).
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<R: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// A mutex that guards no value, only a section of code (the timeline's fan-out, one library's
/// `create`). Not `Locked<Void>`: ThreadSanitizer sees the zero-sized inout access to a `Void`
/// value at the object's own address, outside the lock, and reports it as a race.
package final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    package func withLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
