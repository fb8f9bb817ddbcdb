import Synchronization

/// A value guarded by a mutex: the one locking primitive of the host.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: Mutex<Void> = Mutex(())
    private var value: Value
    public init(_ value: consuming Value) { self.value = value }
    @inline(__always)
    public func withLock<R: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        try mutex.withLock { _ throws(E) -> R in try body(&value) }
    }
}
