/// Where a plugin sits in a timeline. Events pass before → enrichment → destination → after;
/// `utility` plugins receive settings and lifecycle calls but never events.
public enum PluginType: Sendable, CaseIterable, Equatable {
    case before, enrichment, destination, after, utility
}

/// Whether a settings update is the first one a plugin sees or a later refresh.
public enum UpdateType: Sendable, Equatable {
    case initial, refresh
}
