import AnalyticsCore
import Foundation

/// Turns command-line inputs into the client's parts: settings, integration factories.
enum HostSetup {
    /// Settings from a file; a missing or malformed file is a usage error naming the file.
    static func readSettings(path: String) throws -> Settings {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read settings \(path): \(String(cString: strerror(errno)))")
        }
        do {
            let json = try JSON(parsing: data)
            guard case .object(let o) = json else { throw UsageError("settings \(path): the top level must be a JSON object") }
            return Settings(o)
        } catch let e as JSONParseError {
            throw UsageError("settings \(path): \(e)")
        }
    }
}
