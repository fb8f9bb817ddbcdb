import CAnalyticsABI

/// What a library's instances are (ABI 1.2, `AH_EXT_ROLE`): a destination, a library that sees the
/// whole settings document and is created whatever `integrations` names, or both. A library that
/// does not say (every 1.0/1.1 library) is a destination, as before 1.2.
public struct NativeRole: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Per-event hooks through its own worker and timeline; routed by `integrations`.
    public static let destination = NativeRole(rawValue: UInt32(AH_ROLE_DESTINATION))
    /// Created at start-up unless `integrations[key]` is exactly false; `create` and `update` get
    /// the whole settings document.
    public static let wholeSettings = NativeRole(rawValue: UInt32(AH_ROLE_WHOLE_SETTINGS))

    /// The role from a library's `flags` (0 reads as a destination, unknown bits are ignored).
    init(flags: UInt32) {
        let known = NativeRole(rawValue: flags).intersection([.destination, .wholeSettings])
        self = flags == 0 ? .destination : known
    }

    /// E.g. "destination", "whole-settings", "destination+whole-settings".
    public var description: String {
        var parts: [String] = []
        if contains(.destination) { parts.append("destination") }
        if contains(.wholeSettings) { parts.append("whole-settings") }
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}
