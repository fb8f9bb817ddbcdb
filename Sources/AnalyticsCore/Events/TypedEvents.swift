/// What every event a plugin's `execute(event:)` may see has (analytics-swift's protocol of its
/// event structs): ``Event`` itself and its typed views (`TrackEvent`…). The fields are this
/// project's: `context` and `integrations` are objects (empty when absent) rather than `JSON?`.
public protocol RawEvent: Sendable {
    var type: EventType { get }
    var messageId: String? { get }
    var timestamp: String? { get }
    var userId: String? { get set }
    var anonymousId: String? { get set }
    var context: JSONObject { get set }
    var integrations: JSONObject { get set }
}

extension Event: RawEvent {}

/// Typed views of an ``Event`` for the per-call hooks of ``EventPlugin`` (and of Swift
/// integrations, which build them from the JSON they receive). Each view shares the event's
/// storage; changes made through it are changes to the event.
public protocol TypedEvent: RawEvent {
    var raw: Event { get set }
}

extension TypedEvent {
    public var type: EventType { raw.type }
    public var messageId: String? { raw.messageId }
    public var timestamp: String? { raw.timestamp }
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

// analytics-swift's per-event switches for cloud-mode destinations (the `integrations` option).
extension RawEvent {
    /// `integrations` becomes `{"All": false}` plus each of `exceptKeys` (its own settings object
    /// kept when it had one, else `true`).
    public mutating func disableCloudIntegrations(exceptKeys: [String]? = nil) {
        var new: JSONObject = ["All": false]
        for key in exceptKeys ?? [] {
            if let value = integrations[key], value.objectValue != nil { new[key] = value } else { new[key] = true }
        }
        integrations = new
    }

    /// `integrations` becomes `{"All": true}` with each of `exceptKeys` false.
    public mutating func enableCloudIntegrations(exceptKeys: [String]? = nil) {
        var new: JSONObject = ["All": true]
        for key in exceptKeys ?? [] { new[key] = false }
        integrations = new
    }

    /// `integrations[key] = false`.
    public mutating func disableIntegration(key: String) {
        integrations[key] = false
    }

    /// `integrations[key] = true`, unless it holds a settings object (already enabled).
    public mutating func enableIntegration(key: String) {
        if integrations[key]?.objectValue == nil { integrations[key] = true }
    }
}
