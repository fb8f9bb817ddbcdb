import CAnalyticsABI

/// A validated integration library: opened, negotiated, described. Creating instances is separate
/// (it needs settings), and a library may have several instances. Never unloaded.
package final class NativeLibrary: @unchecked Sendable {
    /// What the library declared (file, key, version, ABI, language/toolchain, hooks).
    package let info: NativeLibraryInfo

    let library: DynamicLibrary
    /// The library's `create`, checked non-NULL.
    let create: CreateFunction
    /// The library's hooks table, copied and zero-extended to this host's layout.
    let hooks: ah_hooks
    /// The library's `AH_EXT_APPLICATION` table, if it offers one.
    let application: NativeApplicationTable?
    /// The library's `AH_EXT_BATCH` table (ABI 1.3), if it offers one.
    let batch: NativeBatchTable?
    /// The library's `AH_EXT_NOTICES` table (ABI 1.3), if it offers one.
    let notices: NativeNoticesTable?
    /// `create` of one library is never called concurrently (header rule).
    private let createLock = Lock()

    typealias CreateFunction = @convention(c) (
        UnsafePointer<ah_host>, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int
    ) -> OpaquePointer?

    init(info: NativeLibraryInfo, library: DynamicLibrary, create: CreateFunction, hooks: ah_hooks,
         application: NativeApplicationTable? = nil, batch: NativeBatchTable? = nil,
         notices: NativeNoticesTable? = nil) {
        self.batch = batch
        self.notices = notices
        self.info = info
        self.application = application
        self.library = library
        self.create = create
        self.hooks = hooks
    }

    package var key: String { info.key }
    package var file: String { info.file }

    /// Creates an instance with this integration's settings object (`integrations[key]`).
    /// A failing `create` becomes `.createFailed` carrying the library's own error text.
    package func makeInstance(settings: JSONObject = [:], services: HostServices) throws(PluginLoadError) -> NativeIntegration {
        let table = HostTable(services)
        let text = settings.serializedBytes()
        let errorBuffer = ErrorBuffer()
        let instance: OpaquePointer? = createLock.withLock {
            errorBuffer.clear()
            return text.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    create(table.table, chars.baseAddress!, chars.count, errorBuffer.base, errorBuffer.capacity)
                }
            }
        }
        guard let instance else {
            // Plugins a failed `create` added and did not remove are taken away (and released).
            services.timeline?.removeAll()
            table.instanceEnding()
            table.revoke()  // in case the library kept the table anyway
            let message = errorBuffer.message
            throw PluginLoadError(file: info.file, reason: .createFailed(
                key: info.key, message: message.isEmpty ? "create returned NULL without a reason" : message))
        }
        return NativeIntegration(library: self, instance: instance, services: table, errorBuffer: errorBuffer)
    }
}

/// What a loaded library declared about itself: the row an `analytics-host plugins` listing shows.
package struct NativeLibraryInfo: Sendable, Equatable {
    /// The library file, as found in the plugins directory.
    package let file: String
    /// The integration key settings and the `integrations` option refer to.
    package let key: String
    /// The library's own version string.
    package let version: String
    /// The ABI version the library was compiled against.
    package let abiVersion: ABIVersion
    /// "c", "swift", or what the library declared.
    package let language: String
    /// The toolchain the library declared (checked for Swift libraries), if any.
    package let toolchain: String?
    /// The hooks the library implements.
    package let hooks: NativeHooks
    /// What its instances are (ABI 1.2 `AH_EXT_ROLE`; a destination when the library does not say).
    package let role: NativeRole
    /// Whether it asks that its events be kept on disk until finished (ABI 1.3 `AH_EXT_DURABLE`).
    package var durable: NativeDurability? = nil
    /// The settings it reads (ABI 1.3 `AH_EXT_SETTINGS_SCHEMA`); nil when it does not say.
    package var settingsSchema: SettingsSchema? = nil

    /// A destination: created from `integrations`, fed events by its own worker.
    package var isDestination: Bool { role.contains(.destination) }
    /// Created whatever `integrations` names (unless its entry is `false`), with the whole settings.
    package var wantsWholeSettings: Bool { role.contains(.wholeSettings) }

    /// Whether the library implements the hook for this type of event (a NULL hook is a no-op).
    func handles(_ type: EventType) -> Bool {
        // A batch hook (ABI 1.3) takes events of every type.
        if hooks.contains(.batch) { return true }
        switch type {
        case .track: return hooks.contains(.track)
        case .identify: return hooks.contains(.identify)
        case .screen, .page: return hooks.contains(.screen)
        case .group: return hooks.contains(.group)
        case .alias: return hooks.contains(.alias)
        }
    }
}

/// What a library's instances are (ABI 1.2, `AH_EXT_ROLE`): a destination, a library that sees the
/// whole settings document and is created whatever `integrations` names, or both. A library that
/// does not say (every 1.0/1.1 library) is a destination, as before 1.2.
package struct NativeRole: OptionSet, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Per-event hooks through its own worker and timeline; routed by `integrations`.
    package static let destination = NativeRole(rawValue: UInt32(AH_ROLE_DESTINATION))
    /// Created at start-up unless `integrations[key]` is exactly false; `create` and `update` get
    /// the whole settings document.
    package static let wholeSettings = NativeRole(rawValue: UInt32(AH_ROLE_WHOLE_SETTINGS))

    /// The role from a library's `flags` (0 reads as a destination, unknown bits are ignored).
    init(flags: UInt32) {
        let known = NativeRole(rawValue: flags).intersection([.destination, .wholeSettings])
        self = flags == 0 ? .destination : known
    }

    /// E.g. "destination", "whole-settings", "destination+whole-settings".
    package var description: String {
        var parts: [String] = []
        if contains(.destination) { parts.append("destination") }
        if contains(.wholeSettings) { parts.append("whole-settings") }
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}

/// Which optional hooks a library implements, recorded at load time so that an inspector can list
/// them without creating an instance.
package struct NativeHooks: OptionSet, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }

    package static let identify = NativeHooks(rawValue: 1 << 0)
    package static let track = NativeHooks(rawValue: 1 << 1)
    package static let screen = NativeHooks(rawValue: 1 << 2)
    package static let group = NativeHooks(rawValue: 1 << 3)
    package static let alias = NativeHooks(rawValue: 1 << 4)
    package static let reset = NativeHooks(rawValue: 1 << 5)
    package static let flush = NativeHooks(rawValue: 1 << 6)
    package static let update = NativeHooks(rawValue: 1 << 7)
    package static let destroy = NativeHooks(rawValue: 1 << 8)
    package static let lifecycle = NativeHooks(rawValue: 1 << 9)
    /// `application_event` of the `AH_EXT_APPLICATION` table (not a field of ah_hooks).
    package static let application = NativeHooks(rawValue: 1 << 10)
    /// `events` of the `AH_EXT_BATCH` table (ABI 1.3).
    package static let batch = NativeHooks(rawValue: 1 << 11)
    /// `notice` of the `AH_EXT_NOTICES` table (ABI 1.3).
    package static let notice = NativeHooks(rawValue: 1 << 12)

    /// In header order, with the names used in `include/analytics_plugin.h`.
    package static let named: [(NativeHooks, String)] = [
        (.identify, "identify"), (.track, "track"), (.screen, "screen"), (.group, "group"),
        (.alias, "alias"), (.reset, "reset"), (.flush, "flush"), (.update, "update"),
        (.destroy, "destroy"), (.lifecycle, "lifecycle"), (.application, "application_event"), (.batch, "events"), (.notice, "notice"),
    ]

    /// The implemented hooks' names, in header order.
    package var names: [String] { Self.named.filter { contains($0.0) }.map(\.1) }

    package var description: String { names.joined(separator: ",") }

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
