/// What a loaded library declared about itself: the row an `analytics-host plugins` listing shows.
public struct NativeLibraryInfo: Sendable, Equatable {
    /// The library file, as found in the plugins directory.
    public let file: String
    /// The integration key settings and the `integrations` option refer to.
    public let key: String
    /// The library's own version string.
    public let version: String
    /// The ABI version the library was compiled against.
    public let abiVersion: ABIVersion
    /// "c", "swift", or what the library declared.
    public let language: String
    /// The toolchain the library declared (checked for Swift libraries), if any.
    public let toolchain: String?
    /// The hooks the library implements.
    public let hooks: NativeHooks
    /// What its instances are (ABI 1.2 `AH_EXT_ROLE`; a destination when the library does not say).
    public let role: NativeRole

    /// A destination: created from `integrations`, fed events by its own worker.
    public var isDestination: Bool { role.contains(.destination) }
    /// Created whatever `integrations` names (unless its entry is `false`), with the whole settings.
    public var wantsWholeSettings: Bool { role.contains(.wholeSettings) }

    /// Whether the library implements the hook for this type of event (a NULL hook is a no-op).
    func handles(_ type: EventType) -> Bool {
        switch type {
        case .track: return hooks.contains(.track)
        case .identify: return hooks.contains(.identify)
        case .screen, .page: return hooks.contains(.screen)
        case .group: return hooks.contains(.group)
        case .alias: return hooks.contains(.alias)
        }
    }
}
