import Glibc

/// A value guarded by a mutex: the one locking primitive of the host.
///
/// A pthread mutex rather than the standard library's `Mutex`: on Linux both are a futex with the
/// same uncontended fast path, but only the pthread one is understood by ThreadSanitizer, which
/// would otherwise report every access this lock orders as a race (`make tsan`).
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    package func withLock<R: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
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

/// A callback that any thread may call and that its owner may set or replace: an answer arrived,
/// room is needed. Not `Locked<(() -> Void)?>`: a function-typed value passed `inout` to the
/// generic `withLock` is reabstracted both ways, so every access left the stored closure wrapped
/// in two more thunks, and a callback touched once per event became a chain as long as the run
/// (calling it cost O(events): the durable vendor libraries' quadratic slow-down). A class holds
/// the closure, and only the reference crosses the lock.
package final class CallbackSlot: Sendable {
    private final class Held: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    private let held = Locked<Held?>(nil)

    package init() {}

    package func set(_ body: @escaping @Sendable () -> Void) {
        let new = Held(body)
        held.withLock { $0 = new }
    }

    /// Calls the callback (outside the lock), if one is set.
    package func callAsFunction() {
        held.withLock { $0 }?.body()
    }
}
