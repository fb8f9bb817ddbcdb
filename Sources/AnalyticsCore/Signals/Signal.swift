/// One breadcrumb as it leaves the host: the common fields every signal carries plus its
/// type-specific `data`. Its JSON is `{anonymousId, type, timestamp, index, context, data}`, the
/// shape the Signals runtimes and broadcasters expect.
public struct Signal: Sendable, Equatable {
    /// The user's anonymousId when the signal was emitted.
    public var anonymousId: String
    public var type: SignalType
    /// ISO-8601 with milliseconds, UTC.
    public var timestamp: String
    /// Sequential per client, starting at 0: signals are delivered in this order.
    public var index: Int
    /// `app` and `library`, as on events.
    public var context: JSONObject
    /// The type-specific fields (see the typed signals: ``NavigationSignal`` and friends).
    public var data: JSONObject

    public init(anonymousId: String, type: SignalType, timestamp: String, index: Int,
                context: JSONObject = [:], data: JSONObject) {
        self.anonymousId = anonymousId
        self.type = type
        self.timestamp = timestamp
        self.index = index
        self.context = context
        self.data = data
    }

    /// Reads a signal back from its ``json`` (as it crosses a process boundary); nil when a
    /// field is missing or of the wrong kind.
    init?(json o: JSONObject) {
        guard let anonymousId = o["anonymousId"]?.stringValue, let typeName = o["type"]?.stringValue,
              let type = SignalType(rawValue: typeName), let timestamp = o["timestamp"]?.stringValue,
              let index = o["index"]?.intValue, let data = o["data"]?.objectValue else { return nil }
        self.init(anonymousId: anonymousId, type: type, timestamp: timestamp, index: index,
                  context: o["context"]?.objectValue ?? [:], data: data)
    }

    /// The signal as a JSON object, keys in the documented order.
    public var json: JSONObject {
        var o = JSONObject()
        o.storage.reserveCapacity(6)
        o.appendUnique("anonymousId", .string(anonymousId))
        o.appendUnique("type", .string(type.rawValue))
        o.appendUnique("timestamp", .string(timestamp))
        o.appendUnique("index", .number(Double(index)))
        o.appendUnique("context", .object(context))
        o.appendUnique("data", .object(data))
        return o
    }

    /// Compact JSON text of ``json``.
    public var serializedBytes: [UInt8] { JSON.object(json).serializedBytes() }
}

/// The kinds of breadcrumb an app leaves (Analytics Live's `SignalType`). The raw values are the
/// JSON `type` of a signal and the values of the JavaScript `SignalType` constants.
public enum SignalType: String, Sendable, CaseIterable, Equatable {
    case interaction
    case navigation
    case network
    case localData
    case instrumentation
    case userDefined
}

/// Why a signal given as JSON (a `--signals` line, `ah_host_signals.emit`) was refused: the
/// message names the field and what was wrong with it.
public struct SignalError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "invalid signal: \(message)" }
}
