/// One Segment message, as it travels through the timeline.
///
/// The payload is the whole message as a JSON object, so fields the host does not know about
/// survive untouched from input to upload. Typed accessors cover the spec's common fields.
public struct Event: Sendable {
    /// The call type; kept in step with `payload["type"]`.
    public var type: EventType {
        didSet { if type != oldValue { payload["type"] = .string(type.rawValue) } }
    }

    /// The full message. Changing it detaches this copy from the shared encoding.
    public var payload: JSONObject {
        didSet { encoding = nil }
    }

    /// The JSON text shared by every unchanged copy of this event (see ``SharedEncoding``).
    var encoding: SharedEncoding?

    /// Wraps a message. The type comes from `payload["type"]`, which must be one of the calls.
    public init(payload: JSONObject) throws(EventError) {
        guard let t = payload["type"]?.stringValue else { throw EventError.invalid("event has no \"type\"") }
        guard let type = EventType(rawValue: t) else { throw EventError.invalid("unknown event type \"\(t)\"") }
        self.type = type
        self.payload = payload
    }

    init(type: EventType, payload: JSONObject) {
        self.encoding = nil
        self.type = type
        self.payload = payload
    }

    /// The payload as JSON text; computed once for all unchanged copies that share an encoding.
    public var serializedBytes: [UInt8] {
        guard let encoding else { return payload.serializedBytes() }
        return encoding.bytes(of: payload)
    }

    /// Calls `body` with the payload's JSON text: for a shared encoding already computed, the
    /// shared text itself, read in place (what each of many destinations calling a library does
    /// for every event: no copy, and no reference count written that the others share).
    @inline(__always)
    func withSerializedBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let text = withUnsafePointer(to: self, { SharedEncoding.publishedText(at: UnsafeRawPointer($0.pointer(to: \.encoding)!)) }) {
            return body(text)
        }
        guard let encoding else { return payload.serializedBytes().withUnsafeBytes(body) }
        return encoding.withBytes(of: payload, body)
    }

    /// The length of the JSON text, when a sharer has already written it.
    var computedSerializedCount: Int? { encoding?.computedCount }

    /// Writes the shared text now, so that the readers to come only read it.
    func computeSharedEncoding() { encoding?.compute(payload) }

    /// An edited copy of `original` (a destination filter's result): when the original's text is
    /// known, or shared with other readers who need it anyway, this copy's text is written from
    /// it, copying every unchanged member.
    mutating func deriveEncoding(from original: Event) {
        guard let text = original.encoding?.textToDeriveFrom else { return }
        encoding = SharedEncoding.make(derivedFrom: original.payload, text: text)
    }

    /// Lets every copy made from now on share one encoding, computed by whichever needs it first
    /// (the client does this before fan-out; useful to anyone handing one event to several
    /// consumers of JSON text).
    public mutating func shareEncoding() { if encoding == nil { encoding = SharedEncoding.make() } }

    /// `shareEncoding`, the encoding holding this payload too (for ``EncodedEvent``): true if it
    /// made one, false if the event had an encoding already.
    mutating func shareEncodingHoldingPayload() -> Bool {
        guard encoding == nil else { return false }
        encoding = SharedEncoding.make(holding: payload)
        return true
    }

    // MARK: Common fields

    public var messageId: String? {
        get { payload["messageId"]?.stringValue }
        set { payload["messageId"] = newValue.map(JSON.string) }
    }
    public var timestamp: String? {
        get { payload["timestamp"]?.stringValue }
        set { payload["timestamp"] = newValue.map(JSON.string) }
    }
    public var userId: String? {
        get { payload["userId"]?.stringValue }
        set { payload["userId"] = newValue.map(JSON.string) }
    }
    public var anonymousId: String? {
        get { payload["anonymousId"]?.stringValue }
        set { payload["anonymousId"] = newValue.map(JSON.string) }
    }
    public var context: JSONObject {
        get { payload["context"]?.objectValue ?? [:] }
        set { payload["context"] = .object(newValue) }
    }
    /// The per-call `integrations` option (rules: docs/settings-and-filters.md).
    public var integrations: JSONObject {
        get { payload["integrations"]?.objectValue ?? [:] }
        set { payload["integrations"] = .object(newValue) }
    }

    // MARK: Per-type fields

    /// Track: the event name.
    public var event: String? {
        get { payload["event"]?.stringValue }
        set { payload["event"] = newValue.map(JSON.string) }
    }
    /// Screen / page: the screen name.
    public var name: String? {
        get { payload["name"]?.stringValue }
        set { payload["name"] = newValue.map(JSON.string) }
    }
    /// Track / screen / page properties.
    public var properties: JSONObject {
        get { payload["properties"]?.objectValue ?? [:] }
        set { payload["properties"] = .object(newValue) }
    }
    /// Identify / group traits.
    public var traits: JSONObject {
        get { payload["traits"]?.objectValue ?? [:] }
        set { payload["traits"] = .object(newValue) }
    }
    public var groupId: String? {
        get { payload["groupId"]?.stringValue }
        set { payload["groupId"] = newValue.map(JSON.string) }
    }
    public var previousId: String? {
        get { payload["previousId"]?.stringValue }
        set { payload["previousId"] = newValue.map(JSON.string) }
    }
}

/// A message the host refuses, with the reason.
public enum EventError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self { case .invalid(let why): return "invalid event: \(why)" }
    }
}

/// The Segment calls. `page` is accepted on input (it exists on the web) and is handled by the
/// screen hooks of plugins.
public enum EventType: String, Sendable, CaseIterable {
    case track, identify, screen, page, group, alias
}
