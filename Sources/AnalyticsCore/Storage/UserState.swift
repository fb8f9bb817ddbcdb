import Foundation

/// Who the user is, kept in `user.json` in the storage directory so it survives restarts.
struct UserState: Sendable, Equatable {
    var anonymousId: String
    var userId: String?
    var traits: JSONObject = [:]
    /// The application version and build seen last time, for "Application Updated".
    var appVersion: String?
    var appBuild: String?

    var json: JSON {
        var o: JSONObject = ["anonymousId": .string(anonymousId)]
        if let userId { o["userId"] = .string(userId) }
        o["traits"] = .object(traits)
        if let appVersion { o["appVersion"] = .string(appVersion) }
        if let appBuild { o["appBuild"] = .string(appBuild) }
        return .object(o)
    }

    init(anonymousId: String) { self.anonymousId = anonymousId }

    init?(json: JSON) {
        guard let anon = json["anonymousId"]?.stringValue else { return nil }
        anonymousId = anon
        userId = json["userId"]?.stringValue
        traits = json["traits"]?.objectValue ?? [:]
        appVersion = json["appVersion"]?.stringValue
        appBuild = json["appBuild"]?.stringValue
    }
}

/// Reads and writes the user state file; writes go to a temporary file renamed into place, so a
/// crash never leaves half a file.
struct UserStore: Sendable {
    let path: String

    init(directory: String) { path = directory + "/user.json" }

    /// The saved state; nil when there is none. A corrupt file is reported and treated as absent.
    func load(report: (AnalyticsError) -> Void) -> UserState? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            if let state = UserState(json: try JSON(parsing: data)) { return state }
            report(.storage("\(path): no anonymousId; starting with a new identity"))
        } catch {
            report(.storage("\(path): \(error); starting with a new identity"))
        }
        return nil
    }

    func save(_ state: UserState) throws {
        let tmp = path + ".tmp"
        try Data(state.json.serializedBytes()).write(to: URL(fileURLWithPath: tmp))
        guard rename(tmp, path) == 0 else {
            throw AnalyticsError.storage("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }
}
