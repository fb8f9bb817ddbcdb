import AnalyticsCore
import Foundation

/// Turns command-line inputs into the client's parts: settings, integration factories.
enum HostSetup {
    /// A settings file as `run` and `check-settings` both see it: its JSON (or why it is not JSON,
    /// with line and column) and every problem the shared validator finds.
    struct SettingsFile {
        let path: String
        let json: JSON?
        /// Errors and warnings, in the validator's order.
        let problems: [SettingsProblem]
        /// Why the file is not JSON (with its line and column), when it is not.
        var syntaxError: JSONParseError? = nil

        var object: JSONObject? { json?.objectValue }
        var errors: [SettingsProblem] { problems.filter { !$0.isWarning } }
        var warnings: [SettingsProblem] { problems.filter(\.isWarning) }
    }

    /// Reads and validates a settings file; only an unreadable file is an error here. `libraries`:
    /// the settings schemas of the libraries that may be created, by key (their settings are
    /// checked against them too).
    static func readSettings(path: String, libraries: [String: SettingsSchema] = [:]) throws -> SettingsFile {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw UsageError("cannot read settings \(path): it is a directory")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read settings \(path): \(String(cString: strerror(errno)))")
        }
        let source = "file \(path)"
        do {
            let json = try JSON(parsing: data)
            return SettingsFile(path: path, json: json, problems: SettingsValidator.allProblems(in: json, source: source, libraries: libraries))
        } catch {
            return SettingsFile(path: path, json: nil, problems: [SettingsProblem(source: source, message: error.description)], syntaxError: error)
        }
    }
}
