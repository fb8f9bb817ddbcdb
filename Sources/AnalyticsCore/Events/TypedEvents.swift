/// Typed views of an ``Event`` for the per-call hooks of ``EventPlugin`` (and of Swift
/// integrations, which build them from the JSON they receive). Each view shares the event's
/// storage; changes made through it are changes to the event.
public protocol TypedEvent: Sendable {
    var raw: Event { get set }
}

extension TypedEvent {
    public var messageId: String? { raw.messageId }
    public var userId: String? { get { raw.userId } set { raw.userId = newValue } }
    public var anonymousId: String? { get { raw.anonymousId } set { raw.anonymousId = newValue } }
    public var context: JSONObject { get { raw.context } set { raw.context = newValue } }
    public var integrations: JSONObject { get { raw.integrations } set { raw.integrations = newValue } }
}

public struct TrackEvent: TypedEvent {
    public var raw: Event
    public init(_ raw: Event) { self.raw = raw }
    public var event: String { get { raw.event ?? "" } set { raw.event = newValue } }
    public var properties: JSONObject { get { raw.properties } set { raw.properties = newValue } }
}

public struct IdentifyEvent: TypedEvent {
    public var raw: Event
    public init(_ raw: Event) { self.raw = raw }
    public var traits: JSONObject { get { raw.traits } set { raw.traits = newValue } }
}

/// Screen and page calls.
public struct ScreenEvent: TypedEvent {
    public var raw: Event
    public init(_ raw: Event) { self.raw = raw }
    public var name: String? { get { raw.name } set { raw.name = newValue } }
    public var category: String? {
        get { raw.payload["category"]?.stringValue }
        set { raw.payload["category"] = newValue.map(JSON.string) }
    }
    public var properties: JSONObject { get { raw.properties } set { raw.properties = newValue } }
}

public struct GroupEvent: TypedEvent {
    public var raw: Event
    public init(_ raw: Event) { self.raw = raw }
    public var groupId: String { get { raw.groupId ?? "" } set { raw.groupId = newValue } }
    public var traits: JSONObject { get { raw.traits } set { raw.traits = newValue } }
}

public struct AliasEvent: TypedEvent {
    public var raw: Event
    public init(_ raw: Event) { self.raw = raw }
    public var previousId: String? { get { raw.previousId } set { raw.previousId = newValue } }
}
