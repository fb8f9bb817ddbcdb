/// The `data.action` values of the signal types that have one, as documented for Analytics Live
/// (the JavaScript constants `NavigationAction`, `NetworkAction`, `LocalDataAction` carry the
/// same strings).

/// How the user moved between screens.
public enum NavigationAction: String, Sendable, CaseIterable, Equatable {
    case forward, backward, modal, entering, leaving, page, popup
}

/// Which half of an HTTP exchange a network signal describes.
public enum NetworkAction: String, Sendable, CaseIterable, Equatable {
    case request, response
}

/// What happened to a piece of locally stored data.
public enum LocalDataAction: String, Sendable, CaseIterable, Equatable {
    case loaded, updated, saved, deleted, undefined
}

/// The analytics call an instrumentation signal records (`data.type`; JavaScript `EventType`).
/// `page` events are recorded as `screen`, their counterpart outside the web.
public enum InstrumentationEventType: String, Sendable, CaseIterable, Equatable {
    case track, screen, identify, group, alias, unknown

    init(_ type: EventType) {
        switch type {
        case .track: self = .track
        case .screen, .page: self = .screen
        case .identify: self = .identify
        case .group: self = .group
        case .alias: self = .alias
        }
    }
}
