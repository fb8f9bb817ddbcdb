import Foundation

/// What a process-mode library's settings grant it beyond the jail, per key:
///
///     "integrations": { "Key": { "isolation": { "mode": "process", "allow": ["network", "files:/var/lib/key"] } } }
///
/// `"isolation": "process"` (the short form) grants nothing; an object without "mode" grants
/// without choosing the mode. `network`: sockets of any family (else none but those the host
/// passes), and the host's HTTP requests to anywhere. `files:PATH`: read and write under PATH (a
/// file or a directory), beyond the library's own directory; `read:PATH`: read only.
/// `http:ORIGIN` (`http:https://api.example.com`): the host's HTTP requests to that origin
/// (besides the origins of the URLs its settings name); `http:*`: to any origin whose addresses
/// are public. An entry the host does not know is
/// reported by `problems` and grants nothing. The application may grant the same per key
/// (`IsolationConfiguration.grants`); a library gets both.
public struct JailGrants: Sendable, Equatable {
    public var network = false
    public var files: [String] = []
    public var read: [String] = []
    /// Origins of the host's HTTP requests, normalized (`LibraryHTTPPolicy.origin(of:)`); "*": any public one.
    public var http: [String] = []
    public var problems: [String] = []

    public init(network: Bool = false, files: [String] = [], read: [String] = [], http: [String] = []) {
        self.network = network
        self.files = files
        self.read = read
        self.http = http
    }

    /// Both grants together.
    public func merged(with other: JailGrants?) -> JailGrants {
        guard let other else { return self }
        var all = self
        all.network = network || other.network
        all.files += other.files
        all.read += other.read
        all.http += other.http
        all.problems += other.problems
        return all
    }

    /// The grants of `integrations[key].isolation` (for a whole-settings library, `settings` is
    /// the whole settings; else the library's own).
    public init(settings: JSONObject, key: String? = nil) {
        let isolation = settings["isolation"] ?? key.flatMap { settings["integrations"]?[$0]?["isolation"] }
        guard let allow = isolation?["allow"] else { return }
        guard let entries = allow.arrayValue else {
            problems.append("isolation.allow is not an array of strings")
            return
        }
        for entry in entries {
            guard let text = entry.stringValue else { problems.append("isolation.allow: \(entry.serialized()) is not a string"); continue }
            if text == "network" {
                network = true
            } else if text.hasPrefix("files:"), text.count > 6, text.dropFirst(6).hasPrefix("/") {
                files.append(String(text.dropFirst(6)))
            } else if text.hasPrefix("read:"), text.count > 5, text.dropFirst(5).hasPrefix("/") {
                read.append(String(text.dropFirst(5)))
            } else if text == "http:*" {
                http.append("*")
            } else if text.hasPrefix("http:"), let url = URL(string: String(text.dropFirst(5))), let origin = LibraryHTTPPolicy.origin(of: url) {
                http.append(origin)
            } else {
                problems.append("isolation.allow: \"\(text)\" is not \"network\", \"files:/absolute/path\", \"read:/absolute/path\", "
                    + "\"http:https://host[:port]\" or \"http:*\"")
            }
        }
    }

    /// The runner's command-line arguments for them (the paths are handed open: `RunnerFiles`).
    var runnerArguments: [String] { network ? ["--grant", "network"] : [] }

    /// What the host's HTTP requests may reach for a library of these grants and `settings`
    /// (its own settings: the URLs they name are granted).
    func httpPolicy(settings: JSONObject, maxResponseBytes: Int) -> LibraryHTTPPolicy {
        LibraryHTTPPolicy(unrestricted: network, origins: LibraryHTTPPolicy.origins(named: settings).union(http.filter { $0 != "*" }),
                          anyPublic: http.contains("*"), maxResponseBytes: maxResponseBytes)
    }

    /// "network, files:/a" or "nothing".
    public var summary: String {
        let all = (network ? ["network"] : []) + files.map { "files:\($0)" } + read.map { "read:\($0)" } + http.map { "http:\($0)" }
        return all.isEmpty ? "nothing" : all.joined(separator: ", ")
    }
}
