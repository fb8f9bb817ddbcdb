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
///
/// With the storage's secret (``StorageSecret``) the file ends with a MAC of the rest,
/// `{…,"hostMAC":"<16 hex digits>"}`: a file the host did not write (an identity put there by
/// another program) is reported, set aside as `user.json.rejected` and not used. A file without
/// one is from before the key: taken once, when the key is made (and written again with its MAC).
struct UserStore: Sendable {
    let path: String
    /// The storage's key; nil when it could not be read (that was reported): nothing is checked.
    let key: SipHash24?
    /// The key was made by this start: a file without a MAC is from before it.
    let keyIsNew: Bool

    init(directory: String, secret: StorageSecret? = nil) {
        path = directory + "/user.json"
        key = secret?.key
        keyIsNew = secret?.createdNow ?? false
    }

    private static let macMember = Array(",\"hostMAC\":\"".utf8)

    /// The MAC of the unsigned text; the words in front keep it apart from any queue record's MAC.
    private func mac(_ unsigned: [UInt8], key: SipHash24) -> UInt64 {
        unsigned.withUnsafeBytes { key.mac(0x7573_6572_2e6a_736f, 0x6e00_0000_0000_0001, UInt64(unsigned.count) | 1 << 63, $0) }
    }

    /// `text` with its MAC member appended (unchanged without a key).
    private func signed(_ text: [UInt8]) -> [UInt8] {
        guard let key, text.last == UInt8(ascii: "}"), text.count > 2 else { return text }
        let hex = String(mac(text, key: key), radix: 16)
        return Array(text.dropLast()) + Self.macMember + Array((String(repeating: "0", count: 16 - hex.count) + hex).utf8) + Array("\"}".utf8)
    }

    /// The unsigned text of a signed file, nil when it ends with no MAC member or a wrong one.
    private func verified(_ data: [UInt8], key: SipHash24) -> (text: [UInt8]?, signed: Bool) {
        let tail = Self.macMember.count + 16 + 2
        guard data.count > tail, data.suffix(2) == ArraySlice(Array("\"}".utf8)),
              data[(data.count - tail)..<(data.count - 18)].elementsEqual(Self.macMember),
              let stored = UInt64(String(decoding: data[(data.count - 18)..<(data.count - 2)], as: UTF8.self), radix: 16) else {
            return (nil, false)
        }
        let unsigned = Array(data[..<(data.count - tail)]) + [UInt8(ascii: "}")]
        return (mac(unsigned, key: key) == stored ? unsigned : nil, true)
    }

    /// The saved state; nil when there is none. A corrupt file is reported and treated as absent;
    /// so is one the host did not write (kept as `user.json.rejected`).
    func load(report: (AnalyticsError) -> Void) -> UserState? {
        guard var data = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }) else { return nil }
        var migrate = false
        if let key {
            let check = verified(data, key: key)
            if let text = check.text {
                data = text
            } else if !check.signed && keyIsNew {
                migrate = true  // written before the storage had a key
            } else {
                let aside = path + ".rejected"
                _ = rename(path, aside)
                let why = check.signed ? "its MAC does not verify with this storage's key" : "it has no MAC, and this storage has had its key since an earlier run"
                report(.storage("\(path): not written by this host (\(why)); not used, kept as \(aside); starting with a new identity"))
                return nil
            }
        }
        do {
            if let state = UserState(json: try JSON(parsing: data)) {
                if migrate { try? save(state) }
                return state
            }
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
        let bytes = signed(state.json.serializedBytes())
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
