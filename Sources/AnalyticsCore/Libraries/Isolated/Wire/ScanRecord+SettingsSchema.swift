/// A library's settings schema in its scan record (the `ready` frame and the scan cache), so a
/// library scanned in the runner is checked with exactly the schema an in-process load reads.
/// Only strings, booleans and arrays: the record's numbers are checked elsewhere, and a type is
/// carried by name, a default as its JSON text.
extension ScanRecord {
    static func encode(_ schema: SettingsSchema) -> JSON {
        .array(schema.settings.map { s in
            var o: JSONObject = ["name": .string(s.name), "types": .array(s.types.names.map(JSON.string)),
                                 "required": .bool(s.required), "description": .string(s.summary)]
            if let value = s.defaultValue { o["default"] = .string(value.serialized()) }
            return .object(o)
        })
    }

    /// The schema, or nil when the record's entry is not one (the whole record is then unreadable).
    static func decodeSchema(_ json: JSON) -> SettingsSchema? {
        guard let list = json.arrayValue else { return nil }
        var settings: [SettingDeclaration] = []
        for entry in list {
            guard let o = entry.objectValue, let name = o["name"]?.stringValue,
                  let names = o["types"]?.arrayValue?.compactMap(\.stringValue), let types = SettingTypes(names: names), !types.isEmpty,
                  let required = o["required"]?.boolValue, let summary = o["description"]?.stringValue else { return nil }
            var defaultValue: JSON?
            if let text = o["default"] {
                guard let parsed = text.stringValue.flatMap({ try? JSON(parsing: $0) }) else { return nil }
                defaultValue = parsed
            }
            settings.append(SettingDeclaration(name, types, required: required, default: defaultValue, summary))
        }
        return SettingsSchema(settings)
    }
}
