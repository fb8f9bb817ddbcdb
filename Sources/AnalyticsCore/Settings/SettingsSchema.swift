import CAnalyticsABI

/// The JSON types a setting accepts: the ABI's `AH_SETTING_*` bits (ABI 1.3,
/// `AH_EXT_SETTINGS_SCHEMA`), so one setting may accept several (a string or an array).
public struct SettingTypes: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let string = SettingTypes(rawValue: UInt32(AH_SETTING_STRING))
    public static let number = SettingTypes(rawValue: UInt32(AH_SETTING_NUMBER))
    public static let boolean = SettingTypes(rawValue: UInt32(AH_SETTING_BOOLEAN))
    public static let object = SettingTypes(rawValue: UInt32(AH_SETTING_OBJECT))
    public static let array = SettingTypes(rawValue: UInt32(AH_SETTING_ARRAY))
    public static let any: SettingTypes = [.string, .number, .boolean, .object, .array]

    /// The bits this host knows.
    static let known = SettingTypes.any

    /// Whether `value` (never null here: a null setting counts as absent) is of one of these types.
    public func accepts(_ value: JSON) -> Bool {
        switch value {
        case .string: return contains(.string)
        case .number: return contains(.number)
        case .bool: return contains(.boolean)
        case .object: return contains(.object)
        case .array: return contains(.array)
        case .null: return true
        }
    }

    /// The names, as `plugins` lists them: "string", "string|array", "any".
    public var names: [String] {
        [(SettingTypes.string, "string"), (.number, "number"), (.boolean, "boolean"), (.object, "object"), (.array, "array")]
            .filter { contains($0.0) }.map(\.1)
    }

    public var description: String { self == .any ? "any" : names.joined(separator: "|") }

    /// "a string or an array", for messages.
    var expected: String {
        let words = [(SettingTypes.string, "a string"), (.number, "a number"), (.boolean, "a boolean"), (.object, "an object"), (.array, "an array")]
            .filter { contains($0.0) }.map(\.1)
        return words.count <= 1 ? (words.first ?? "nothing") : words.dropLast().joined(separator: ", ") + " or " + words.last!
    }

    /// From the names `names` produces (the scan record's form); nil for a name this host does not know.
    public init?(names: [String]) {
        var types: SettingTypes = []
        for name in names {
            switch name {
            case "string": types.insert(.string)
            case "number": types.insert(.number)
            case "boolean": types.insert(.boolean)
            case "object": types.insert(.object)
            case "array": types.insert(.array)
            default: return nil
            }
        }
        self = types
    }
}

/// One setting a library reads from its settings object (or one the host reads), as the library
/// declares it: like a property `gst-inspect` shows.
public struct SettingDeclaration: Sendable, Equatable {
    /// The key in the settings object, e.g. `"apiKey"`.
    public var name: String
    public var types: SettingTypes
    /// Without it the library cannot be created (the host refuses to create it and says why).
    public var required: Bool
    /// What applies when the setting is absent (nil: nothing, or a required setting).
    public var defaultValue: JSON?
    /// One line saying what it does.
    public var summary: String

    public init(_ name: String, _ types: SettingTypes, required: Bool = false, default defaultValue: JSON? = nil, _ summary: String) {
        self.name = name
        self.types = types
        self.required = required
        self.defaultValue = defaultValue
        self.summary = summary
    }

    public static func string(_ name: String, required: Bool = false, default value: String? = nil, _ summary: String) -> SettingDeclaration {
        SettingDeclaration(name, .string, required: required, default: value.map(JSON.string), summary)
    }
    public static func number(_ name: String, required: Bool = false, default value: Double? = nil, _ summary: String) -> SettingDeclaration {
        SettingDeclaration(name, .number, required: required, default: value.map { .number(JSONNumber($0)) }, summary)
    }
    public static func boolean(_ name: String, required: Bool = false, default value: Bool? = nil, _ summary: String) -> SettingDeclaration {
        SettingDeclaration(name, .boolean, required: required, default: value.map(JSON.bool), summary)
    }
    public static func object(_ name: String, required: Bool = false, default value: JSONObject? = nil, _ summary: String) -> SettingDeclaration {
        SettingDeclaration(name, .object, required: required, default: value.map(JSON.object), summary)
    }
    public static func array(_ name: String, required: Bool = false, default value: [JSON]? = nil, _ summary: String) -> SettingDeclaration {
        SettingDeclaration(name, .array, required: required, default: value.map(JSON.array), summary)
    }
}

/// The settings an object may hold: checked by `check-settings` and, for a library's own
/// settings, by the host before it creates the library's instance.
///
/// What is checked: a declared setting of the wrong type, or a required one missing (or null),
/// is an error; a key nobody declared is a warning naming the nearest declared key ("did you
/// mean"), because a misspelled key is otherwise silently ignored and its default applies.
public struct SettingsSchema: Sendable, Equatable {
    public var settings: [SettingDeclaration]

    public init(_ settings: [SettingDeclaration]) { self.settings = settings }

    public subscript(name: String) -> SettingDeclaration? { settings.first { $0.name == name } }

    /// Every problem of `object` found at JSON path `path` (dotted). `alsoKnown` are keys that
    /// belong there without being in this schema (the host's own keys of a destination): checked
    /// and suggested like the others. `unknownIsError`: an unknown key is an error (routing rules).
    package func problems(in object: JSONObject, at path: String, source: String, what: String,
                          alsoKnown: [SettingDeclaration] = [], unknownIsError: Bool = false) -> [SettingsProblem] {
        var out: [SettingsProblem] = []
        func at(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        for declared in settings + alsoKnown {
            let value = object[declared.name]
            if value == nil || value!.isNull {
                if declared.required {
                    out.append(SettingsProblem(source: source, path: at(declared.name),
                                               message: "missing: required (\(declared.types.expected): \(declared.summary))"))
                }
                continue
            }
            if !declared.types.accepts(value!) {
                out.append(SettingsProblem(source: source, path: at(declared.name),
                                           message: "expected \(declared.types.expected), found \(JSON.kindName(value!)) (\(declared.summary))"))
            }
        }
        let names = Set((settings + alsoKnown).map(\.name))
        for key in object.keys where !names.contains(key) {
            var message = "unknown key in \(what)" + (unknownIsError ? "" : ", ignored")
            // The schema's own names first: a library's "types" over the CDN's "type".
            if let near = NearestName.suggestion(for: key, among: settings.map(\.name)) ?? NearestName.suggestion(for: key, among: alsoKnown.map(\.name)) {
                message += "; did you mean \"\(near)\"?"
            } else if !settings.isEmpty {
                message += " (known: \(settings.map(\.name).joined(separator: ", ")))"
            }
            out.append(SettingsProblem(source: source, path: at(key), message: message, severity: unknownIsError ? .error : .warning))
        }
        return out
    }
}
