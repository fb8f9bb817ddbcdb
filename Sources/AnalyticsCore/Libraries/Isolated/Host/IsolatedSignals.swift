import Foundation

/// `AH_EXT_SIGNALS` for a process-isolated library, on the host's side. Its emits arrive as calls
/// and go into the client's signals like any library's. Its subscribers live in its runner, on the
/// runner's own hub (same hold / ready / replay / unsubscribe rules as in-process); once the first
/// of them exists, the runner asks for the client's signals and this forwards every one to it, in
/// index order, as a `signal` frame. One object per runner process: when the process ends, the
/// forwarding stops (signals emitted until a restarted process subscribes again do not reach it).
final class IsolatedSignals: @unchecked Sendable {
    private let signals: Signals?
    private let process: RunnerProcess
    private let key: String
    private let timeout: Double
    private let subscription = Locked<UInt64?>(nil)

    init(signals: Signals?, process: RunnerProcess, key: String, timeout: Double) {
        self.signals = signals
        self.process = process
        self.key = key
        self.timeout = timeout
    }

    /// The runner's first subscriber exists: forward every signal from now (and those the client
    /// holds for its first subscriber, if none came before).
    func forward() -> NativeHookResult {
        guard let signals else { return .permanent("signals are not enabled in this client") }
        let process = self.process, timeout = self.timeout
        return subscription.withLock { id -> NativeHookResult in
            if id != nil { return .ok }
            id = signals.subscribe(name: "\(key) (process-isolated)") { json, _ in
                var w = WireWriter()
                w.begin(.signal)
                w.data(json)
                w.end()
                _ = process.send(w.bytes, deadline: monotonicSeconds() + timeout)
            }
            return id == nil ? .retryable("signals are stopping") : .ok
        }
    }

    /// The process ended: no more forwarding to it.
    func end() {
        guard let id = subscription.withLock({ id -> UInt64? in defer { id = nil }; return id }) else { return }
        signals?.unsubscribe(id)
    }
}
