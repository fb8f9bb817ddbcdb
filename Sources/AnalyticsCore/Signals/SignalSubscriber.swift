import Foundation

/// Something that receives every signal as JSON text: a JavaScript runtime (LivePlugins through
/// `ah_host_signals.subscribe`) or Swift code. Used only on the signals thread.
final class SignalSubscriber {
    let id: UInt64
    let name: String
    let deliver: @Sendable (_ json: [UInt8], _ signal: Signal) -> Void
    let release: (@Sendable () -> Void)?
    /// Not ready: signals wait in `pending` (bounded; the oldest are shed and counted).
    var ready: Bool
    var pending = RingBuffer<Signal>()
    var shed = 0
    /// Held around each delivery, so that removing a subscriber from another thread waits for
    /// a delivery in progress and no delivery starts afterwards.
    let gate = NSLock()
    /// Guarded by `gate` (or set on the signals thread itself).
    var removed = false
    /// Guarded by `gate`: `release` has been called.
    private var released = false

    /// Calls `release` once, whichever thread gets here first: the one that unsubscribes (so the
    /// release has happened before the instance's `destroy`) or the signals thread at shutdown.
    func releaseOnce() {
        gate.lock()
        let first = !released
        released = true
        gate.unlock()
        if first { release?() }
    }

    /// Delivers unless removed.
    func send(_ json: [UInt8], _ signal: Signal) -> Bool {
        gate.lock()
        defer { gate.unlock() }
        guard !removed else { return false }
        deliver(json, signal)
        return true
    }

    init(id: UInt64, name: String, ready: Bool,
         deliver: @escaping @Sendable ([UInt8], Signal) -> Void, release: (@Sendable () -> Void)?) {
        self.id = id
        self.name = name
        self.ready = ready
        self.deliver = deliver
        self.release = release
    }
}
