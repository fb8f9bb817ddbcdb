/// A signal before the host stamps it (anonymousId, timestamp, index, context): its type and its
/// `data` object. The typed signals below build `data` with the documented field names; any type
/// of the app's own can conform too (or use ``UserDefinedSignal``).
public protocol RawSignal: Sendable {
    var signalType: SignalType { get }
    var signalData: JSONObject { get }
}

/// The user entered, left or moved between screens. `data`: `action`, `screen`.
public struct NavigationSignal: RawSignal, Equatable {
    public var action: NavigationAction
    public var screen: String
    public init(action: NavigationAction, screen: String) {
        self.action = action
        self.screen = screen
    }
    public var signalType: SignalType { .navigation }
    public var signalData: JSONObject { ["action": .string(action.rawValue), "screen": .string(screen)] }
}

/// The user touched a UI component. `data`: `component`, `title` (optional), `data` (optional).
public struct InteractionSignal: RawSignal, Equatable {
    public var component: String
    public var title: String?
    public var data: JSONObject?
    public init(component: String, title: String? = nil, data: JSONObject? = nil) {
        self.component = component
        self.title = title
        self.data = data
    }
    public var signalType: SignalType { .interaction }
    public var signalData: JSONObject {
        var o: JSONObject = ["component": .string(component)]
        if let title { o["title"] = .string(title) }
        if let data { o["data"] = .object(data) }
        return o
    }
}

/// One half of an HTTP exchange. `data`: `action`, `url`, `statusCode` (responses), `data` (the
/// JSON body, when there is one), plus `method` and `requestId`, which pair a response with its
/// request.
public struct NetworkSignal: RawSignal, Equatable {
    public var action: NetworkAction
    public var url: String
    public var statusCode: Int?
    public var data: JSON?
    public var method: String?
    public var requestId: String?
    public init(action: NetworkAction, url: String, statusCode: Int? = nil, data: JSON? = nil,
                method: String? = nil, requestId: String? = nil) {
        self.action = action
        self.url = url
        self.statusCode = statusCode
        self.data = data
        self.method = method
        self.requestId = requestId
    }
    public var signalType: SignalType { .network }
    public var signalData: JSONObject {
        var o: JSONObject = ["action": .string(action.rawValue), "url": .string(url)]
        if let statusCode { o["statusCode"] = .number(Double(statusCode)) }
        if let data { o["data"] = data }
        if let method { o["method"] = .string(method) }
        if let requestId { o["requestId"] = .string(requestId) }
        return o
    }
}

/// Locally stored data was read or changed. `data`: `action`, `identifier`, `data` (optional).
public struct LocalDataSignal: RawSignal, Equatable {
    public var action: LocalDataAction
    public var identifier: String
    public var data: JSON?
    public init(action: LocalDataAction, identifier: String, data: JSON? = nil) {
        self.action = action
        self.identifier = identifier
        self.data = data
    }
    public var signalType: SignalType { .localData }
    public var signalData: JSONObject {
        var o: JSONObject = ["action": .string(action.rawValue), "identifier": .string(identifier)]
        if let data { o["data"] = data }
        return o
    }
}

/// An analytics call went through the client. `data`: `type`, `rawEvent`.
public struct InstrumentationSignal: RawSignal, Equatable {
    public var eventType: InstrumentationEventType
    public var rawEvent: JSONObject
    public init(eventType: InstrumentationEventType, rawEvent: JSONObject) {
        self.eventType = eventType
        self.rawEvent = rawEvent
    }
    public init(event: Event) {
        self.init(eventType: InstrumentationEventType(event.type), rawEvent: event.payload)
    }
    public var signalType: SignalType { .instrumentation }
    public var signalData: JSONObject { ["type": .string(eventType.rawValue), "rawEvent": .object(rawEvent)] }
}

/// Anything else the app wants its event generators to see: `data` is the app's own object.
public struct UserDefinedSignal: RawSignal, Equatable {
    public var data: JSONObject
    public init(data: JSONObject) { self.data = data }
    public var signalType: SignalType { .userDefined }
    public var signalData: JSONObject { data }
}
