/// The Segment calls. `page` is accepted on input (it exists on the web) and is handled by the
/// screen hooks of plugins.
public enum EventType: String, Sendable, CaseIterable {
    case track, identify, screen, page, group, alias
}
