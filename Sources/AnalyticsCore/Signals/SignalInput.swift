/// A signal read from JSON text (an input line, a library's `emit`), checked against the
/// documented fields of its type before the host stamps it. Unknown fields pass through.
public struct SignalInput: RawSignal, Equatable {
    public var signalType: SignalType
    public var signalData: JSONObject
    /// Kept when given (replaying a recorded session); the host's clock otherwise.
    public var timestamp: String?
    /// Kept when given; the client's anonymousId otherwise.
    public var anonymousId: String?

    /// Validates `{type, data, timestamp?, anonymousId?}`. A given `index` or `context` is
    /// ignored: the host numbers signals itself, in the order it receives them.
    public init(json: JSONObject) throws(SignalError) {
        guard let typeValue = json["type"] else { throw SignalError("missing \"type\"") }
        guard let typeName = typeValue.stringValue else { throw SignalError("\"type\" must be a string, found \(JSON.kindName(typeValue))") }
        guard let type = SignalType(rawValue: typeName) else {
            throw SignalError("unknown type \"\(typeName)\" (expected one of \(SignalType.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let data: JSONObject
        switch json["data"] {
        case nil, .null?:
            if type != .userDefined { throw SignalError("a \(typeName) signal needs a \"data\" object") }
            data = [:]
        case .object(let o)?: data = o
        case let other?: throw SignalError("\"data\" must be an object, found \(JSON.kindName(other))")
        }
        try SignalInput.check(type, data)
        signalType = type
        signalData = data
        timestamp = try SignalInput.optionalString(json, "timestamp")
        if let timestamp, !ISOTimestamp.isValid(timestamp) {
            throw SignalError("\"timestamp\" must be an ISO-8601 date-time such as 2026-11-22T10:00:00.000Z, not \(JSON.string(timestamp).serialized())")
        }
        anonymousId = try SignalInput.optionalString(json, "anonymousId")
    }

    private static func optionalString(_ o: JSONObject, _ key: String, in path: String = "") throws(SignalError) -> String? {
        switch o[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        case let other?: throw SignalError("\"\(path)\(key)\" must be a string, found \(JSON.kindName(other))")
        }
    }

    private static func requiredString(_ o: JSONObject, _ key: String) throws(SignalError) -> String {
        guard let s = try optionalString(o, key, in: "data.") else { throw SignalError("missing \"data.\(key)\"") }
        return s
    }

    private static func action<A: RawRepresentable & CaseIterable>(_ o: JSONObject, _ key: String, _: A.Type) throws(SignalError) where A.RawValue == String {
        let s = try requiredString(o, key)
        guard A(rawValue: s) != nil else {
            throw SignalError("\"data.\(key)\" is \"\(s)\", expected one of \(A.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    private static func check(_ type: SignalType, _ data: JSONObject) throws(SignalError) {
        switch type {
        case .navigation:
            try action(data, "action", NavigationAction.self)
            _ = try requiredString(data, "screen")
        case .interaction:
            _ = try requiredString(data, "component")
            _ = try optionalString(data, "title", in: "data.")
            if let d = data["data"], d.objectValue == nil, !d.isNull {
                throw SignalError("\"data.data\" must be an object, found \(JSON.kindName(d))")
            }
        case .network:
            try action(data, "action", NetworkAction.self)
            _ = try requiredString(data, "url")
            if let code = data["statusCode"], !code.isNull {
                guard let n = code.intValue, (100...999).contains(n) else {
                    throw SignalError("\"data.statusCode\" must be an HTTP status code, found \(code)")
                }
            }
        case .localData:
            try action(data, "action", LocalDataAction.self)
            _ = try requiredString(data, "identifier")
        case .instrumentation:
            try action(data, "type", InstrumentationEventType.self)
            guard data["rawEvent"]?.objectValue != nil else { throw SignalError("\"data.rawEvent\" must be an object (the analytics event)") }
        case .userDefined:
            break
        }
    }
}
