/// Writes every signal to the host's log as one line of JSON (at info level), in any build.
public final class DebugBroadcaster: SignalBroadcaster {
    private let fixedLog: (@Sendable (LogLevel, String) -> Void)?
    private let environment = Locked<SignalBroadcastEnvironment?>(nil)

    /// `log`: where lines go; the client's log handler when nil.
    public init(log: (@Sendable (LogLevel, String) -> Void)? = nil) { fixedLog = log }

    public func attach(_ environment: SignalBroadcastEnvironment) { self.environment.withLock { $0 = environment } }

    public func added(_ signal: Signal) {
        let line = "signal " + String(decoding: signal.serializedBytes, as: UTF8.self)
        if let fixedLog { fixedLog(.info, line) } else { environment.withLock { $0 }?.log(.info, line) }
    }

    public func relay() {}
}
