/// A signal read from JSON text (an input line, a library's `emit`), checked against the
/// documented fields of its type before the host stamps it. Unknown fields pass through.
/// Navigation, interaction and network signals come in two shapes: today's (analytics-swift-live
/// 3.x: `{currentScreen, previousScreen}`, `{target: {component, title, data}}`, network with
/// `body`, `status`, `ok`, `contentType`) and the earlier one (`{action, screen}`,
/// `{component, title, data}`, network with `statusCode`, `data`), and analytics-next's web shapes
/// (navigation `{action: urlChange|pageLoad, url, path, …}`, interaction `{eventType, target}` with
/// a DOM element's fields). An earlier-shape or web signal gets today's members added (its own
/// stay, so generators written for any shape read it).
package struct SignalInput: RawSignal, Equatable {
    package var signalType: SignalType
    package var signalData: JSONObject
    /// Kept when given (replaying a recorded session); the host's clock otherwise.
    package var timestamp: String?
    /// Kept when given; the client's anonymousId otherwise.
    package var anonymousId: String?

    /// Validates `{type, data, timestamp?, anonymousId?}`. A given `index` or `context` is
    /// ignored: the host numbers signals itself, in the order it receives them.
    package init(json: JSONObject) throws(SignalError) {
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
        signalData = SignalInput.current(type, data)
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
            if isWebNavigation(data) {
                _ = try requiredString(data, "url")
                if let action = try optionalString(data, "action", in: "data."), !["urlChange", "pageLoad"].contains(action) {
                    throw SignalError("\"data.action\" is \"\(action)\", expected urlChange or pageLoad (a web navigation signal)")
                }
                for key in ["hash", "path", "search", "title", "prevUrl"] { _ = try optionalString(data, key, in: "data.") }
            } else if data["currentScreen"] != nil || data["screen"] == nil {
                if data["currentScreen"] == nil { throw SignalError("missing \"data.currentScreen\" (or the earlier \"data.screen\")") }
                _ = try requiredString(data, "currentScreen")
                _ = try optionalString(data, "previousScreen", in: "data.")
                if data["action"].map({ !$0.isNull }) == true { try action(data, "action", NavigationAction.self) }
            } else {
                try action(data, "action", NavigationAction.self)
                _ = try requiredString(data, "screen")
            }
        case .interaction:
            if let eventType = data["eventType"], !eventType.isNull {
                guard let name = eventType.stringValue, ["click", "submit", "change"].contains(name) else {
                    throw SignalError("\"data.eventType\" must be click, submit or change (a web interaction signal), found \(eventType.serialized())")
                }
                let element = data["target"] ?? data["submitter"]
                guard let element, element.objectValue != nil else {
                    throw SignalError(element == nil ? "missing \"data.target\" (a web interaction signal)"
                                                     : "\"data.target\" must be an object, found \(JSON.kindName(element!))")
                }
            } else if data["target"] != nil || data["component"] == nil {
                guard let target = data["target"]?.objectValue else {
                    throw SignalError(data["target"] == nil ? "missing \"data.target\" (or the earlier \"data.component\")"
                                                           : "\"data.target\" must be an object, found \(JSON.kindName(data["target"]!))")
                }
                guard try optionalString(target, "component", in: "data.target.") != nil else {
                    throw SignalError("missing \"data.target.component\"")
                }
                _ = try optionalString(target, "title", in: "data.target.")
            } else {
                _ = try requiredString(data, "component")
                _ = try optionalString(data, "title", in: "data.")
                if let d = data["data"], d.objectValue == nil, !d.isNull {
                    throw SignalError("\"data.data\" must be an object, found \(JSON.kindName(d))")
                }
            }
        case .network:
            try action(data, "action", NetworkAction.self)
            _ = try requiredString(data, "url")
            for key in ["status", "statusCode"] {
                if let code = data[key], !code.isNull {
                    guard let n = code.intValue, (100...999).contains(n) else {
                        throw SignalError("\"data.\(key)\" must be an HTTP status code, found \(code)")
                    }
                }
            }
            if let ok = data["ok"], !ok.isNull, ok.boolValue == nil { throw SignalError("\"data.ok\" must be a boolean, found \(JSON.kindName(ok))") }
            _ = try optionalString(data, "contentType", in: "data.")
            _ = try optionalString(data, "method", in: "data.")
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

    /// analytics-next's navigation shape: `{action: urlChange|pageLoad, url, hash, path, …}`.
    private static func isWebNavigation(_ data: JSONObject) -> Bool {
        data["currentScreen"] == nil && data["screen"] == nil && data["url"] != nil
    }

    /// The web element's text a title is read from, in the order analytics-next serializes it.
    private static func elementTitle(_ element: JSONObject) -> JSON? {
        for key in ["title", "innerText", "textContent", "label", "name", "value"] {
            if let s = element[key]?.stringValue, !s.isEmpty { return .string(s) }
        }
        return nil
    }

    /// `data` with today's members added to an earlier-shape or web-shaped navigation,
    /// interaction or network signal (checked already). A web navigation gets `currentScreen`
    /// (its path, else its url) and `previousScreen` (its prevUrl); a web interaction's element
    /// gets `component` (its tagName or nodeName, else the eventType) and `title`.
    static func current(_ type: SignalType, _ data: JSONObject) -> JSONObject {
        var o = data
        switch type {
        case .navigation:
            if isWebNavigation(o) {
                o["currentScreen"] = o["path"].flatMap { $0.stringValue.map(JSON.string) } ?? o["url"]
                if let previous = o["prevUrl"], !previous.isNull { o["previousScreen"] = previous }
            } else if o["currentScreen"] == nil, let screen = o["screen"] { o["currentScreen"] = screen }
        case .interaction:
            if let eventType = o["eventType"]?.stringValue {
                let key = o["target"]?.objectValue != nil ? "target" : "submitter"
                if var element = o[key]?.objectValue, element["component"] == nil {
                    element["component"] = [element["tagName"], element["nodeName"]].compactMap { $0?.stringValue }.first
                        .map { .string($0.lowercased()) } ?? .string(eventType)
                    if element["title"] == nil, let title = elementTitle(element) { element["title"] = title }
                    o["target"] = .object(element)
                }
            } else if o["target"] == nil, let component = o["component"] {
                var target: JSONObject = ["component": component]
                if let title = o["title"], !title.isNull { target["title"] = title }
                if let d = o["data"], !d.isNull { target["data"] = d }
                o["target"] = .object(target)
            }
        case .network:
            if o["status"] == nil, let code = o["statusCode"], !code.isNull { o["status"] = code }
            if o["body"] == nil, let body = o["data"], !body.isNull { o["body"] = body }
            if o["ok"] == nil, let n = o["status"]?.intValue { o["ok"] = .bool((200..<300).contains(n)) }
        default:
            break
        }
        return o
    }
}
