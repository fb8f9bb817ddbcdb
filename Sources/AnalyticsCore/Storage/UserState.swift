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

/// Reads and writes the user state file; writes go to a temporary file that is synced and then
/// renamed into place, so a crash (or a power loss) leaves the old file or the new one, never half
/// of one.
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
        func failure(_ what: String) -> AnalyticsError { .storage("cannot \(what): \(String(cString: strerror(errno)))") }
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create \(tmp)") }
        let bytes = state.json.serializedBytes()
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { let e = failure("write \(tmp)"); close(fd); throw e }
            written += n
        }
        guard fsync(fd) == 0 else { let e = failure("sync \(tmp)"); close(fd); throw e }
        close(fd)
        guard rename(tmp, path) == 0 else { throw failure("replace \(path)") }
    }
}
