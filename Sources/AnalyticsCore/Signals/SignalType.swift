/// The kinds of breadcrumb an app leaves (Analytics Live's `SignalType`). The raw values are the
/// JSON `type` of a signal and the values of the JavaScript `SignalType` constants.
public enum SignalType: String, Sendable, CaseIterable, Equatable {
    case interaction
    case navigation
    case network
    case localData
    case instrumentation
    case userDefined
}
