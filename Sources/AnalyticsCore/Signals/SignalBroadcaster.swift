/// Somewhere signals go besides the JavaScript runtime (the Segment debugger, a webhook, the log).
///
/// Threads: `attach` once, then `added` and `relay` are called on the client's signals thread,
/// one at a time and in signal order, so they must not block: a broadcaster that sends over the
/// network hands batches to its own thread (see ``SignalBatchSender``). `flush` and `shutdown`
/// may come from any thread.
public protocol SignalBroadcaster: AnyObject, Sendable {
    /// Called once when the client's signals start.
    func attach(_ environment: SignalBroadcastEnvironment)
    /// One signal, as emitted (values not obfuscated).
    func added(_ signal: Signal)
    /// Send what was collected: every `relayCount` signals, every `relayInterval` and on flush.
    func relay()
    /// Wait (at most `timeout` seconds) until what was relayed has been sent or given up on.
    func flush(timeout: Double) -> Bool
    /// Stop sending; nothing is called afterwards.
    func shutdown()
}

extension SignalBroadcaster {
    public func flush(timeout: Double) -> Bool { true }
    public func shutdown() {}
}

/// What the client tells its broadcasters.
public struct SignalBroadcastEnvironment: Sendable {
    public var writeKey: String
    public var debugMode: Bool
    public var obfuscate: Bool
    public var relayCount: Int
    public var log: @Sendable (LogLevel, String) -> Void
    public var report: @Sendable (AnalyticsError) -> Void

    public init(writeKey: String, debugMode: Bool = false, obfuscate: Bool = true, relayCount: Int = 20,
                log: @escaping @Sendable (LogLevel, String) -> Void = { _, _ in },
                report: @escaping @Sendable (AnalyticsError) -> Void = { _ in }) {
        self.writeKey = writeKey
        self.debugMode = debugMode
        self.obfuscate = obfuscate
        self.relayCount = relayCount
        self.log = log
        self.report = report
    }
}

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
