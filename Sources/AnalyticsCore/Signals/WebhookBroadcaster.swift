import Foundation

/// POSTs signals to a URL of the app's, in batches of up to `relayCount`:
/// `{"batch": [signal, …], "sentAt": "<ISO-8601>"}` with `Content-Type: application/json`,
/// retried with backoff (see ``SignalBatchSender``). In any build; values are sent as emitted
/// unless `obfuscate` is set.
public final class WebhookBroadcaster: SignalBroadcaster {
    public let url: URL
    private let obfuscate: Bool
    private let maxAttempts: Int
    private let sleeper: RetrySleeper?
    private let headers: [(name: String, value: String)]
    private let state = Locked(State())
    private struct State {
        var pending: [Signal] = []
        var sender: SignalBatchSender?
        var limit = 1000
    }

    /// `headers`: added to every request (e.g. an authorization of the webhook's).
    public convenience init(url: URL, headers: [(name: String, value: String)] = [], obfuscate: Bool = false,
                            maxAttempts: Int = 5) {
        self.init(url: url, headers: headers, obfuscate: obfuscate, maxAttempts: maxAttempts, sleeper: nil)
    }

    /// `sleeper`: how the waits between attempts pass (tests record them instead of waiting).
    package init(url: URL, headers: [(name: String, value: String)] = [], obfuscate: Bool = false,
                 maxAttempts: Int = 5, sleeper: RetrySleeper?) {
        self.url = url
        self.headers = headers
        self.obfuscate = obfuscate
        self.maxAttempts = maxAttempts
        self.sleeper = sleeper
    }

    /// An http(s) URL with a host, or nil.
    public static func validURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", url.host != nil else { return nil }
        return url
    }

    package var counts: SignalBatchSender.Counters { state.withLock { $0.sender }?.counts ?? .init() }

    public func attach(_ environment: SignalBroadcastEnvironment) {
        let sender = SignalBatchSender(
            name: "webhook", url: url,
            headers: [(name: "Content-Type", value: "application/json")] + headers,
            maxAttempts: maxAttempts, sleeper: sleeper ?? InterruptibleSleeper(), report: environment.report)
        state.withLock {
            $0.sender = sender
            $0.limit = max(1, environment.relayCount)
        }
    }

    public func added(_ signal: Signal) {
        let full = state.withLock { s -> Bool in
            s.pending.append(obfuscate ? SignalObfuscation.obfuscate(signal) : signal)
            return s.pending.count >= s.limit
        }
        if full { relay() }
    }

    public func relay() {
        let (batch, sender) = state.withLock { s -> ([Signal], SignalBatchSender?) in
            defer { s.pending.removeAll(keepingCapacity: true) }
            return (s.pending, s.sender)
        }
        guard !batch.isEmpty, let sender else { return }
        let body: JSON = ["batch": .array(batch.map { .object($0.json) }), "sentAt": .string(ISOTimestamp.now())]
        sender.send(.init(body: body.serializedBytes(), signalCount: batch.count))
    }

    public func flush(timeout: Double) -> Bool {
        relay()
        return state.withLock { $0.sender }?.drain(timeout: timeout) ?? true
    }

    public func shutdown() { state.withLock { $0.sender }?.stop(timeout: 5) }
}
