/// What a destination filter did with one event.
public enum FilterOutcome: Sendable {
    /// The event goes on to the destination, possibly transformed.
    case kept(Event)
    /// The event does not reach this destination (other destinations are unaffected).
    case dropped(reason: String)

    public var event: Event? {
        if case .kept(let e) = self { return e }
        return nil
    }
}
