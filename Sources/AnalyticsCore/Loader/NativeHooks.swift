import CAnalyticsABI

/// Which optional hooks a library implements, recorded at load time so that an inspector can list
/// them without creating an instance.
public struct NativeHooks: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let identify = NativeHooks(rawValue: 1 << 0)
    public static let track = NativeHooks(rawValue: 1 << 1)
    public static let screen = NativeHooks(rawValue: 1 << 2)
    public static let group = NativeHooks(rawValue: 1 << 3)
    public static let alias = NativeHooks(rawValue: 1 << 4)
    public static let reset = NativeHooks(rawValue: 1 << 5)
    public static let flush = NativeHooks(rawValue: 1 << 6)
    public static let update = NativeHooks(rawValue: 1 << 7)
    public static let destroy = NativeHooks(rawValue: 1 << 8)
    public static let lifecycle = NativeHooks(rawValue: 1 << 9)
    /// `application_event` of the `AH_EXT_APPLICATION` table (not a field of ah_hooks).
    public static let application = NativeHooks(rawValue: 1 << 10)
    /// `events` of the `AH_EXT_BATCH` table (ABI 1.3).
    public static let batch = NativeHooks(rawValue: 1 << 11)
    /// `notice` of the `AH_EXT_NOTICES` table (ABI 1.3).
    public static let notice = NativeHooks(rawValue: 1 << 12)

    /// In header order, with the names used in `include/analytics_plugin.h`.
    public static let named: [(NativeHooks, String)] = [
        (.identify, "identify"), (.track, "track"), (.screen, "screen"), (.group, "group"),
        (.alias, "alias"), (.reset, "reset"), (.flush, "flush"), (.update, "update"),
        (.destroy, "destroy"), (.lifecycle, "lifecycle"), (.application, "application_event"), (.batch, "events"), (.notice, "notice"),
    ]

    /// The implemented hooks' names, in header order.
    public var names: [String] { Self.named.filter { contains($0.0) }.map(\.1) }

    public var description: String { names.joined(separator: ",") }

    /// The set a (size-checked, zero-extended) hooks table implements.
    init(_ table: ah_hooks) {
        var set: NativeHooks = []
        if table.identify != nil { set.insert(.identify) }
        if table.track != nil { set.insert(.track) }
        if table.screen != nil { set.insert(.screen) }
        if table.group != nil { set.insert(.group) }
        if table.alias != nil { set.insert(.alias) }
        if table.reset != nil { set.insert(.reset) }
        if table.flush != nil { set.insert(.flush) }
        if table.update != nil { set.insert(.update) }
        if table.destroy != nil { set.insert(.destroy) }
        if table.lifecycle != nil { set.insert(.lifecycle) }
        self = set
    }
}
