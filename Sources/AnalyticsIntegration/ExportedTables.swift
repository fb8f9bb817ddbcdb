import CAnalyticsABI

/// The library's one `ah_integration` and its `ah_hooks`, allocated on the first entry call and
/// never freed: the host keeps pointers into them for the life of the process. A hook is filled
/// only when the type conforms to its protocol (IntegrationHooks.swift); the others stay NULL,
/// which the ABI defines as a successful no-op the host does not call.
///
/// The C hooks cannot capture the integration's type, so it is recorded here once; `create`
/// reads it back. Each plugin library links its own copy of this module, so each has its own
/// record.
enum ExportedTables {
    private struct State {
        var type: (any Integration.Type)?
        var integration: UnsafePointer<ah_integration>?
        /// The `AH_EXT_DURABLE` table, for a type conforming to ``DurableEvents``.
        var durable: UnsafePointer<ah_durable>?
        /// The `AH_EXT_SETTINGS_SCHEMA` table, for a type conforming to ``DeclaredSettings``.
        var settingsSchema: UnsafePointer<ah_settings_schema>?
    }

    private static let state = Locked(State())

    static func tables<T: Integration>(for type: T.Type) -> Result<UnsafePointer<ah_integration>, IntegrationError> {
        state.withLock { state -> Result<UnsafePointer<ah_integration>, IntegrationError> in
            if let existing = state.integration, let registered = state.type {
                guard ObjectIdentifier(registered) == ObjectIdentifier(T.self) else {
                    return .failure(.permanent("this library already exports integration \"\(registered.key)\"; one integration per library"))
                }
                return .success(existing)
            }
            if let problem = textProblem(T.key, "key") ?? textProblem(T.version, "version") {
                return .failure(.permanent("\(String(describing: T.self)): \(problem)"))
            }
            let hooks = UnsafeMutablePointer<ah_hooks>.allocate(capacity: 1)
            hooks.initialize(to: ah_hooks(
                size: UInt32(MemoryLayout<ah_hooks>.size),
                identify: T.self is any IdentifyLaterHook.Type ? hookIdentifyLater : T.self is any IdentifyHook.Type ? hookIdentify : nil,
                track: T.self is any TrackLaterHook.Type ? hookTrackLater : T.self is any TrackHook.Type ? hookTrack : nil,
                screen: T.self is any ScreenLaterHook.Type ? hookScreenLater : T.self is any ScreenHook.Type ? hookScreen : nil,
                group: T.self is any GroupLaterHook.Type ? hookGroupLater : T.self is any GroupHook.Type ? hookGroup : nil,
                alias: T.self is any AliasLaterHook.Type ? hookAliasLater : T.self is any AliasHook.Type ? hookAlias : nil,
                reset: T.self is any ResetHook.Type ? hookReset : nil,
                flush: T.self is any FlushHook.Type ? hookFlush : nil,
                update: T.self is any SettingsHook.Type ? hookUpdate : nil,
                destroy: hookDestroy,
                lifecycle: T.self is any LifecycleHook.Type ? hookLifecycle : nil))
            if let durable = T.self as? any DurableEvents.Type {
                let table = UnsafeMutablePointer<ah_durable>.allocate(capacity: 1)
                table.initialize(to: ah_durable(size: UInt32(MemoryLayout<ah_durable>.size), flags: 0,
                                                max_disk_bytes: durable.durableMaxDiskBytes ?? 0))
                state.durable = UnsafePointer(table)
            }
            if let declared = T.self as? any DeclaredSettings.Type {
                state.settingsSchema = settingsSchemaTable(declared.declaredSettings)
            }
            let integration = UnsafeMutablePointer<ah_integration>.allocate(capacity: 1)
            integration.initialize(to: ah_integration(
                size: UInt32(MemoryLayout<ah_integration>.size),
                abi_version: ABIVersion.host.raw,
                key: permanentCString(T.key),
                version: permanentCString(T.version),
                language: permanentCString(AH_LANGUAGE_SWIFT),
                toolchain: permanentCString(SwiftToolchain.current),
                create: hookCreate,
                hooks: hooks,
                get_extension: T.self is any NoticesHook.Type || state.durable != nil || state.settingsSchema != nil ? libraryExtension : nil))
            state.type = T.self
            state.integration = UnsafePointer(integration)
            return .success(UnsafePointer(integration))
        }
    }

    /// The exported type, for `create`.
    static var registeredType: (any Integration.Type)? { state.withLock { $0.type } }

    /// The exported type's `AH_EXT_DURABLE` table, if it conforms to ``DurableEvents``.
    static var durableTable: UnsafePointer<ah_durable>? { state.withLock { $0.durable } }

    /// The exported type's `AH_EXT_SETTINGS_SCHEMA` table, if it conforms to ``DeclaredSettings``.
    static var settingsSchemaTable: UnsafePointer<ah_settings_schema>? { state.withLock { $0.settingsSchema } }

    /// The declarations as the C table, with every string permanent (never freed, like the rest).
    private static func settingsSchemaTable(_ declarations: [SettingDeclaration]) -> UnsafePointer<ah_settings_schema> {
        let entries = UnsafeMutablePointer<ah_setting>.allocate(capacity: max(1, declarations.count))
        for (i, d) in declarations.enumerated() {
            (entries + i).initialize(to: ah_setting(
                name: permanentCString(d.name), types: d.types.rawValue, required: d.required ? 1 : 0,
                default_json: d.defaultValue.map { permanentCString($0.serialized()) }, description: permanentCString(d.summary)))
        }
        let table = UnsafeMutablePointer<ah_settings_schema>.allocate(capacity: 1)
        table.initialize(to: ah_settings_schema(size: UInt32(MemoryLayout<ah_settings_schema>.size), setting_size: UInt32(MemoryLayout<ah_setting>.size),
                                                count: UInt32(declarations.count), flags: 0, settings: UnsafePointer(entries)))
        return UnsafePointer(table)
    }

    private static func textProblem(_ text: String, _ what: String) -> String? {
        if text.isEmpty { return "\(what) is empty" }
        if text.utf8.contains(0) { return "\(what) \"\(text)\" contains a NUL character" }
        return nil
    }

    /// A NUL-terminated copy that is never freed (the host may read it until the process exits).
    private static func permanentCString(_ text: String) -> UnsafePointer<CChar> {
        let utf8 = Array(text.utf8)
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count + 1)
        utf8.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: utf8.count) }
        buffer[utf8.count] = 0
        return UnsafePointer(buffer)
    }
}

/// The capability tables the library offers (`ah_integration.get_extension`): `AH_EXT_NOTICES`
/// for an integration that conforms to ``NoticesHook``, `AH_EXT_DURABLE` for one that conforms
/// to ``DurableEvents``, `AH_EXT_SETTINGS_SCHEMA` for one that conforms to ``DeclaredSettings``.
private func libraryExtension(_ id: UnsafePointer<CChar>) -> UnsafeRawPointer? {
    switch String(cString: id) {
    case AH_EXT_NOTICES:
        return ExportedTables.registeredType.map { $0 is any NoticesHook.Type } == true ? UnsafeRawPointer(noticesTable) : nil
    case AH_EXT_DURABLE:
        return ExportedTables.durableTable.map(UnsafeRawPointer.init)
    case AH_EXT_SETTINGS_SCHEMA:
        return ExportedTables.settingsSchemaTable.map(UnsafeRawPointer.init)
    default:
        return nil
    }
}

nonisolated(unsafe) private let noticesTable: UnsafePointer<ah_notices> = {
    let table = UnsafeMutablePointer<ah_notices>.allocate(capacity: 1)
    table.initialize(to: ah_notices(size: UInt32(MemoryLayout<ah_notices>.size), notice: hookNotice))
    return UnsafePointer(table)
}()

private func hookNotice(_ self_: OpaquePointer, _ kind: Int32, _ text: UnsafePointer<CChar>, _ length: Int) {
    let message = String(decoding: UnsafeRawBufferPointer(start: text, count: max(0, length)), as: UTF8.self)
    let notice: HostNotice
    switch kind {
    case Int32(AH_NOTICE_ABANDONED): notice = .abandoned(message)
    case Int32(AH_NOTICE_REFUSED): notice = .refused(message)
    default: notice = .other(kind: kind, message)
    }
    IntegrationInstance.from(self_).notices?.notice(notice)
}
