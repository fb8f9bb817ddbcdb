import AnalyticsCore
import Foundation

/// Turns command-line inputs into the client's parts: settings, integration factories.
enum HostSetup {
    /// A settings file as `run` and `check-settings` both see it: its JSON (or why it is not JSON,
    /// with line and column) and every problem the shared validator finds.
    struct SettingsFile {
        let path: String
        let json: JSON?
        let problems: [SettingsProblem]

        var object: JSONObject? { json?.objectValue }
    }

    /// Reads and validates a settings file; only an unreadable file is an error here.
    static func readSettings(path: String) throws -> SettingsFile {
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
            return SettingsFile(path: path, json: json, problems: SettingsValidator.allProblems(in: json, source: source))
        } catch {
            return SettingsFile(path: path, json: nil, problems: [SettingsProblem(source: source, message: error.description)])
        }
    }
}
