/// What a middleware sees: the call and who made it. `modify` gives a changed copy to pass on.
public struct MiddlewareContext: Sendable {
    /// The call: an event type, or `reset` / `flush`, which pass through middleware too.
    public enum Call: Sendable, Equatable {
        case event(EventType)
        case reset
        case flush
    }

    /// The event, for event calls; nil for reset and flush.
    public var payload: Event?
    public var userId: String?
    public var anonymousId: String?
    private let control: Call?

    /// The call type; follows the payload's type, so a middleware can turn a screen into a track.
    public var eventType: Call { payload.map { .event($0.type) } ?? control ?? .flush }

    init(payload: Event) {
        self.payload = payload
        self.userId = payload.userId
        self.anonymousId = payload.anonymousId
        self.control = nil
    }

    init(control: Call, userId: String?, anonymousId: String?) {
        self.payload = nil
        self.userId = userId
        self.anonymousId = anonymousId
        self.control = control
    }

    /// A copy with the changes `body` makes; the original is untouched.
    public func modify(_ body: (inout MiddlewareContext) -> Void) -> MiddlewareContext {
        var copy = self
        body(&copy)
        return copy
    }
}
