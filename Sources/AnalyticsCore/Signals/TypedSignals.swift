/// A signal before the host stamps it (anonymousId, timestamp, index, context): its type and its
/// `data` object. The typed signals below build `data` with the documented field names; any type
/// of the app's own can conform too (or use ``UserDefinedSignal``).
public protocol RawSignal: Sendable {
    var signalType: SignalType { get }
    var signalData: JSONObject { get }
}

/// The user moved to a screen. `data`: `currentScreen`, `previousScreen` (optional), the shape
/// analytics-swift-live 3.x sends; `action` (optional) is the earlier shape's kind of move.
public struct NavigationSignal: RawSignal, Equatable {
    public var currentScreen: String
    public var previousScreen: String?
    /// The earlier shape's `action` (forward, modal, …), kept when given.
    public var action: NavigationAction?
    public init(currentScreen: String, previousScreen: String? = nil) {
        self.currentScreen = currentScreen
        self.previousScreen = previousScreen
    }
    /// The earlier shape (`{action, screen}`): `screen` is the current screen. Its `data` keeps
    /// the earlier members and has today's added, as an earlier-shape input signal does.
    public init(action: NavigationAction, screen: String) {
        self.currentScreen = screen
        self.action = action
        earlierShape = true
    }
    private var earlierShape = false
    public var signalType: SignalType { .navigation }
    public var signalData: JSONObject {
        if earlierShape, let action {
            return ["action": .string(action.rawValue), "screen": .string(currentScreen), "currentScreen": .string(currentScreen)]
        }
        var o: JSONObject = ["currentScreen": .string(currentScreen)]
        if let previousScreen { o["previousScreen"] = .string(previousScreen) }
        if let action { o["action"] = .string(action.rawValue) }
        return o
    }
}

/// The user touched a UI component. `data`: `target` = {`component`, `title` (optional), `data`
/// (optional)}, the shape analytics-swift-live 3.x sends.
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
        var target: JSONObject = ["component": .string(component)]
        if let title { target["title"] = .string(title) }
        if let data { target["data"] = .object(data) }
        return ["target": .object(target)]
    }
}

/// One half of an HTTP exchange. `data`: `action`, `url`, `body` (the JSON body, when there is
/// one), `contentType`, `method`, `status` and `ok` (responses), `requestId` (pairs a response
/// with its request): the shape analytics-swift-live 3.x sends.
public struct NetworkSignal: RawSignal, Equatable {
    public var action: NetworkAction
    public var url: String
    public var status: Int?
    public var body: JSON?
    public var contentType: String?
    public var method: String?
    public var requestId: String?
    public init(action: NetworkAction, url: String, body: JSON? = nil, contentType: String? = nil,
                method: String? = nil, status: Int? = nil, requestId: String? = nil) {
        self.action = action
        self.url = url
        self.body = body
        self.contentType = contentType
        self.method = method
        self.status = status
        self.requestId = requestId
    }
    /// The earlier shape (`statusCode`, `data`): its `data` keeps those members and has today's
    /// added (`status`, `body`, `ok`), as an earlier-shape input signal does.
    public init(action: NetworkAction, url: String, statusCode: Int?, data: JSON? = nil,
                method: String? = nil, requestId: String? = nil) {
        self.init(action: action, url: url, body: data, method: method, status: statusCode, requestId: requestId)
        earlierShape = true
    }
    private var earlierShape = false
    /// A 2xx status (nil without a status).
    public var ok: Bool? { status.map { (200..<300).contains($0) } }
    public var signalType: SignalType { .network }
    public var signalData: JSONObject {
        var o: JSONObject = ["action": .string(action.rawValue), "url": .string(url)]
        if earlierShape {
            if let status { o["statusCode"] = .number(Double(status)) }
            if let body { o["data"] = body }
            if let method { o["method"] = .string(method) }
            if let requestId { o["requestId"] = .string(requestId) }
            return SignalInput.current(.network, o)
        }
        if let body { o["body"] = body }
        if let contentType { o["contentType"] = .string(contentType) }
        if let method { o["method"] = .string(method) }
        if let status { o["status"] = .number(Double(status)) }
        if let ok { o["ok"] = .bool(ok) }
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
