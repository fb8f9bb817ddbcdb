import Foundation

/// Sends signals to Segment (the workspace's signals debugger) as track events named
/// "Segment Signal Generated" whose properties are the signal, values obfuscated unless told
/// otherwise, batched to `<apiHost>/b` like the tracking API (`{"batch", "sentAt", "writeKey"}`,
/// Basic auth with the write key). Only when the client's signals run in debug mode: in a
/// release build it collects nothing and sends nothing.
public final class SegmentBroadcaster: SignalBroadcaster {
    public struct Options: Sendable {
        /// `signals.segment.io/v1` (https assumed) or a full base such as `http://127.0.0.1:9/v1`.
        public var apiHost = "signals.segment.io/v1"
        public var maxAttempts = 5
        package var sleeper: RetrySleeper?
        public init() {}
    }

    public static let eventName = "Segment Signal Generated"

    private let options: Options
    private let state = Locked(State())
    private struct State {
        var environment: SignalBroadcastEnvironment?
        var pending: [JSON] = []
        var sender: SignalBatchSender?
        var limit = 20
    }

    public init(options: Options = Options()) { self.options = options }

    package var counts: SignalBatchSender.Counters { state.withLock { $0.sender }?.counts ?? .init() }

    public func attach(_ environment: SignalBroadcastEnvironment) {
        guard environment.debugMode else {
            state.withLock { $0.environment = environment }
            return
        }
        // Attached again (the settings changed the environment): the sender made before stays.
        if let made = state.withLock({ s -> SignalBatchSender? in
            guard let sender = s.sender else { return nil }
            s.environment = environment
            s.limit = max(1, environment.relayCount)
            return sender
        }) { _ = made; return }
        var sender: SignalBatchSender?
        do {
            let url = try UploadConfiguration.url(base: options.apiHost, path: "b")
            let auth = Data("\(environment.writeKey):".utf8).base64EncodedString()
            sender = SignalBatchSender(
                name: "Segment", url: url,
                headers: [(name: "Content-Type", value: "application/json"), (name: "Authorization", value: "Basic \(auth)")],
                maxAttempts: options.maxAttempts, sleeper: options.sleeper ?? InterruptibleSleeper(), report: environment.report)
        } catch {
            environment.report(.delivery("signals Segment broadcaster: \(error)"))
        }
        state.withLock {
            $0.environment = environment
            $0.sender = sender
            $0.limit = max(1, environment.relayCount)
        }
    }

    /// The track event that carries one signal.
    public static func event(for signal: Signal, obfuscate: Bool) -> JSONObject {
        let shown = obfuscate ? SignalObfuscation.obfuscate(signal) : signal
        return [
            "type": "track",
            "event": .string(eventName),
            "anonymousId": .string(signal.anonymousId),
            "messageId": .string(MessageID.make()),
            "timestamp": .string(signal.timestamp),
            "properties": .object(shown.json),
            "context": .object(signal.context),
            "integrations": [:],
        ]
    }

    public func added(_ signal: Signal) {
        let full = state.withLock { s -> Bool in
            guard let env = s.environment, env.debugMode, s.sender != nil else { return false }
            s.pending.append(.object(SegmentBroadcaster.event(for: signal, obfuscate: env.obfuscate)))
            return s.pending.count >= s.limit
        }
        if full { relay() }
    }

    public func relay() {
        let (batch, sender, writeKey) = state.withLock { s -> ([JSON], SignalBatchSender?, String) in
            defer { s.pending.removeAll(keepingCapacity: true) }
            return (s.pending, s.sender, s.environment?.writeKey ?? "")
        }
        guard !batch.isEmpty, let sender else { return }
        let body: JSON = ["batch": .array(batch), "sentAt": .string(ISOTimestamp.now()), "writeKey": .string(writeKey)]
        sender.send(.init(body: body.serializedBytes(), signalCount: batch.count))
    }

    public func flush(timeout: Double) -> Bool {
        relay()
        return state.withLock { $0.sender }?.drain(timeout: timeout) ?? true
    }

    public func shutdown() { state.withLock { $0.sender }?.stop(timeout: 5) }
}
