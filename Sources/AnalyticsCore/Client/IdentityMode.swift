/// Whose events a client sends, which decides where an event's ids and context come from.
///
/// - ``device``: one user on one machine, as analytics-swift on a phone. The client keeps that
///   user (`user.json`: anonymousId, userId, traits), stamps every event with it, changes it on
///   identify/alias/reset, and adds the machine's context (os, device, locale, timezone, app).
/// - ``server``: messages from many people, as Segment's server libraries (analytics-python,
///   -node, -go) and its HTTP API take them. Each event's ids are its own: nothing is stored,
///   nothing of one event reaches another, and an event with neither a userId nor an anonymousId
///   is refused, as the API refuses it. The host adds `context.library` only: the machine it runs
///   on is not the users'.
public enum IdentityMode: String, Sendable, Equatable, CaseIterable {
    case device
    case server
}

extension Event {
    /// Server mode's rule: the event names its person itself, with a non-empty userId or
    /// anonymousId (Segment's tracking API refuses a message with neither).
    func requireOwnIds() throws(EventError) {
        if let u = userId, !u.isEmpty { return }
        if let a = anonymousId, !a.isEmpty { return }
        throw .invalid("\(type.rawValue) has neither a userId nor an anonymousId; in server mode every event carries its own "
                       + "(nothing is filled in from another event or a stored user), as Segment's API requires")
    }
}
