import CAnalyticsABI

/// A library's `AH_EXT_SETTINGS_SCHEMA` table (ABI 1.3): the settings it reads, copied once at
/// load time into a ``SettingsSchema`` (so nothing of the library's memory is read later, and
/// process mode carries the same value in the scan record). A malformed table refuses the
/// library with the reason, as any malformed struct.
enum NativeSettingsSchemaTable {
    /// More entries than any library needs; a larger count is taken for garbage.
    static let maximumCount = 1024
    /// `ah_setting` as in its first generation: up to and including `description`.
    static let settingMinimumSize = MemoryLayout<ah_setting>.size

    static func lookup(_ getExtension: (@convention(c) (UnsafePointer<CChar>) -> UnsafeRawPointer?)?,
                       key: String, file: String) throws(PluginLoadError) -> SettingsSchema? {
        guard let getExtension, let table = getExtension(AH_EXT_SETTINGS_SCHEMA) else { return nil }
        func refuse(_ why: String) -> PluginLoadError {
            PluginLoadError(file: file, reason: .invalidIntegration("the \(AH_EXT_SETTINGS_SCHEMA) table of \"\(key)\": \(why)"))
        }
        let raw = UnsafeRawPointer(table)
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= MemoryLayout<ah_settings_schema>.size else {
            throw refuse("ah_settings_schema.size is \(size) bytes, smaller than its /1 layout (\(MemoryLayout<ah_settings_schema>.size) bytes)")
        }
        let header = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_settings_schema())
        let stride = Int(header.setting_size)
        guard stride >= settingMinimumSize else {
            throw refuse("setting_size is \(stride) bytes, smaller than ah_setting's /1 layout (\(settingMinimumSize) bytes)")
        }
        let count = Int(header.count)
        guard count <= maximumCount else { throw refuse("count is \(count), more than \(maximumCount)") }
        guard count == 0 || header.settings != nil else { throw refuse("count is \(count) but settings is NULL") }
        var declarations: [SettingDeclaration] = []
        for i in 0..<count {
            let entry = ABINegotiation.copyPrefix(of: UnsafeRawPointer(header.settings!) + i * stride, declaredSize: stride, into: ah_setting())
            guard let namePointer = entry.name, let name = String(validatingCString: namePointer), !name.isEmpty else {
                throw refuse("entry \(i) has a NULL, empty or non-UTF-8 name")
            }
            guard !declarations.contains(where: { $0.name == name }) else { throw refuse("\"\(name)\" is declared twice") }
            let types = SettingTypes(rawValue: entry.types).intersection(.known)
            guard !types.isEmpty else { throw refuse("\"\(name)\" has no known AH_SETTING_* type bit (types \(entry.types))") }
            var defaultValue: JSON?
            if let text = entry.default_json {
                guard let json = String(validatingCString: text).flatMap({ try? JSON(parsing: $0) }), !json.isNull else {
                    throw refuse("the default of \"\(name)\" is not JSON text")
                }
                guard types.accepts(json) else {
                    throw refuse("the default of \"\(name)\" is \(JSON.kindName(json)), not \(types.expected)")
                }
                defaultValue = json
            }
            let summary = entry.description.flatMap { String(validatingCString: $0) } ?? ""
            declarations.append(SettingDeclaration(name, types, required: entry.required != 0, default: defaultValue, summary))
        }
        return SettingsSchema(declarations)
    }
}
