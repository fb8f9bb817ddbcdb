/// How a client's signals are kept, relayed and observed (Analytics Live's `SignalsConfiguration`;
/// the same keys may come from the settings' top-level `"signals"` object, see
/// ``applying(settings:)``).
public struct SignalsConfiguration: Sendable {
    /// Signals a JavaScript runtime keeps for correlation (`signals.maxBufferSize`), and the bound
    /// of the queue that holds signals emitted before a runtime is ready.
    public var maximumBufferSize = 1000
    /// Broadcasters relay after this many signals…
    public var relayCount = 20
    /// …or this many seconds after the last relay, and on flush.
    public var relayInterval: Double = 60
    /// Where signals are sent besides the JavaScript runtime. Default: Segment's (which sends
    /// only in debug mode, see ``debugMode``).
    public var broadcasters: [SignalBroadcaster] = [SegmentBroadcaster()]
    /// Hosts whose traffic becomes network signals; `"*"` is every host and `"*.example.com"`
    /// every subdomain of example.com.
    public var allowedNetworkHosts: [String] = ["*"]
    /// Hosts never observed, same patterns. Segment's own hosts are always added
    /// (``SignalsConfiguration/segmentHosts``).
    public var blockedNetworkHosts: [String] = []
    /// Response bodies larger than this are not captured in network signals.
    public var maximumNetworkBodyBytes = 64 * 1024
    /// The app is a debug build: the Segment broadcaster sends only then.
    public var debugMode = false
    /// Replace the values inside `data` before a signal leaves the process through a broadcaster
    /// that sends it elsewhere (Segment); the JavaScript runtime always sees the real values.
    public var obfuscateBroadcasts = true
    /// Signals waiting for the dispatcher at most; past it the oldest are shed and counted.
    public var dispatchQueueCapacity = 10_000
    /// What a full dispatch queue does with one more signal: shed the oldest (an app's UI thread
    /// never waits) or make the emitter wait (batch input, benchmarks).
    public var overflow = OverflowPolicy.dropOldest

    /// Hosts that are never observed, whatever the lists say: Segment's endpoints.
    public static let segmentHosts = [
        "api.segment.com", "cdn-settings.segment.com", "signals.segment.com",
        "api.segment.build", "cdn.segment.build", "signals.segment.build",
        "api.segment.io", "cdn-settings.segment.io", "signals.segment.io",
    ]

    public init() {}

    /// The block list in force: the configured hosts plus Segment's.
    public var effectiveBlockedHosts: [String] { blockedNetworkHosts + SignalsConfiguration.segmentHosts }

    /// This configuration with the keys the settings' `"signals"` object carries
    /// (`maximumBufferSize`, `relayCount`, `relayInterval`, `debugMode`, `allowedNetworkHosts`,
    /// `blockedNetworkHosts`, `maximumNetworkBodyBytes`, `broadcasters`: an array of
    /// `{"type": "debug"}`, `{"type": "webhook", "url": …}`, `{"type": "segment"}` that replaces
    /// the configured list). A wrong value is reported in `problems` (with its JSON path) and the
    /// configured value stays.
    public func applying(settings: Settings, log: @escaping @Sendable (LogLevel, String) -> Void = { _, _ in })
        -> (configuration: SignalsConfiguration, problems: [String])
    {
        var c = self
        var problems: [String] = []
        guard let value = settings.json["signals"], !value.isNull else { return (c, problems) }
        guard let o = value.objectValue else { return (c, ["signals: expected an object, found \(JSON.kindName(value))"]) }
        func int(_ key: String, _ range: ClosedRange<Int>, _ target: inout Int) {
            guard let v = o[key], !v.isNull else { return }
            guard let n = v.intValue, range.contains(n) else {
                problems.append("signals.\(key): expected a whole number in \(range.lowerBound)…\(range.upperBound), found \(v)")
                return
            }
            target = n
        }
        func hosts(_ key: String, _ target: inout [String]) {
            guard let v = o[key], !v.isNull else { return }
            guard let a = v.arrayValue, a.allSatisfy({ $0.stringValue != nil }) else {
                problems.append("signals.\(key): expected an array of host names")
                return
            }
            target = a.compactMap(\.stringValue)
        }
        int("maximumBufferSize", 1...1_000_000, &c.maximumBufferSize)
        int("relayCount", 1...1_000_000, &c.relayCount)
        int("maximumNetworkBodyBytes", 0...(64 << 20), &c.maximumNetworkBodyBytes)
        if let v = o["relayInterval"], !v.isNull {
            if let d = v.doubleValue, d > 0, d <= 86_400 { c.relayInterval = d } else {
                problems.append("signals.relayInterval: expected seconds in (0, 86400], found \(v)")
            }
        }
        if let v = o["debugMode"], !v.isNull {
            if let b = v.boolValue { c.debugMode = b } else {
                problems.append("signals.debugMode: expected true or false, found \(v)")
            }
        }
        hosts("allowedNetworkHosts", &c.allowedNetworkHosts)
        hosts("blockedNetworkHosts", &c.blockedNetworkHosts)
        if let v = o["broadcasters"], !v.isNull {
            if let list = v.arrayValue {
                var made: [SignalBroadcaster] = []
                var ok = true
                for (i, item) in list.enumerated() {
                    switch SignalsConfiguration.broadcaster(from: item, log: log) {
                    case .success(let b): made.append(b)
                    case .failure(let why): problems.append("signals.broadcasters.\(i): \(why.message)"); ok = false
                    }
                }
                if ok { c.broadcasters = made }
            } else {
                problems.append("signals.broadcasters: expected an array, found \(JSON.kindName(v))")
            }
        }
        return (c, problems)
    }

    static func broadcaster(from item: JSON, log: @escaping @Sendable (LogLevel, String) -> Void) -> Result<SignalBroadcaster, SignalError> {
        guard let o = item.objectValue, let type = o["type"]?.stringValue else {
            return .failure(SignalError("expected {\"type\": \"debug\" | \"webhook\" | \"segment\", …}"))
        }
        switch type {
        case "debug": return .success(DebugBroadcaster(log: log))
        case "segment":
            var b = SegmentBroadcaster.Options()
            if let host = o["apiHost"]?.stringValue { b.apiHost = host }
            return .success(SegmentBroadcaster(options: b))
        case "webhook":
            guard let text = o["url"]?.stringValue, let url = WebhookBroadcaster.validURL(text) else {
                return .failure(SignalError("a webhook broadcaster needs \"url\": an http(s) URL"))
            }
            return .success(WebhookBroadcaster(url: url))
        default:
            return .failure(SignalError("unknown broadcaster type \"\(type)\""))
        }
    }
}
