import Foundation

/// Where settings come from and where they are cached.
package struct SettingsSourceConfiguration: Sendable {
    package var writeKey: String
    /// Settings host: `cdn-settings.segment.com` (https assumed) or a full base such as
    /// `http://127.0.0.1:8080`. Settings are read from `<cdnHost>/v1/projects/<writeKey>/settings`.
    package var cdnHost: String
    /// When set, settings are read from this JSON file (CDN shape) instead of the network; relative
    /// `path` options of its integrations are relative to the file (see `SettingsFilePaths`).
    package var localFile: String?
    /// Directory for the on-disk cache of the last good fetched settings (nil: no cache).
    package var storageDirectory: String?
    /// User-supplied settings used when nothing better is available.
    package var defaultSettings: JSONObject?
    /// `apiHost` of the built-in last-resort settings.
    package var defaultAPIHost: String
    package var timeout: Double

    package init(writeKey: String, cdnHost: String = "cdn-settings.segment.com", localFile: String? = nil,
                storageDirectory: String? = nil, defaultSettings: JSONObject? = nil,
                defaultAPIHost: String = "api.segment.io/v1", timeout: Double = 10) {
        self.writeKey = writeKey
        self.cdnHost = cdnHost
        self.localFile = localFile
        self.storageDirectory = storageDirectory
        self.defaultSettings = defaultSettings
        self.defaultAPIHost = defaultAPIHost
        self.timeout = timeout
    }
}

/// Which source the settings in force came from.
public enum SettingsOrigin: Sendable, Equatable {
    case file(String)
    case network(String)
    case cache(String)
    /// The new settings were unusable; the ones already in force stay.
    case previous
    case defaults
    /// `{"integrations": {"Segment.io": {"apiKey": <writeKey>, "apiHost": …}}}`.
    case builtIn
}

/// Settings to apply, where they came from, and what went wrong on the way.
package struct SettingsLoadResult: Sendable {
    package var settings: JSONObject
    package var origin: SettingsOrigin
    /// Problems met (a failed fetch, a malformed document …), each naming source and JSON path.
    package var problems: [SettingsProblem]
}

/// Obtains the CDN settings document: from a local file, or fetched and cached on disk, with the
/// fallback order cached copy → configured defaults → built-in Segment-only settings.
/// Malformed settings never replace usable ones; the problem names the JSON path.
package final class SettingsSource: Sendable {
    package let configuration: SettingsSourceConfiguration
    private let client: HTTPClient

    package init(configuration: SettingsSourceConfiguration, client: HTTPClient = HTTPClient()) {
        self.configuration = configuration
        self.client = client
    }

    /// The settings URL, `<cdnHost>/v1/projects/<writeKey>/settings`.
    package var settingsURL: Result<URL, UploadEndpointError> {
        let key = configuration.writeKey.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? configuration.writeKey
        return Result { () throws(UploadEndpointError) in
            try UploadConfiguration.url(base: configuration.cdnHost, path: "v1/projects/\(key)/settings")
        }
    }

    /// Path of the cache file (nil when no storage directory is configured).
    package var cachePath: String? {
        guard let dir = configuration.storageDirectory else { return nil }
        let safe = String(configuration.writeKey.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
        return (dir as NSString).appendingPathComponent("settings-\(safe).json")
    }

    /// Loads settings. `previous` are the settings in force (nil at start-up): on a refresh whose
    /// new settings are unusable, they stay.
    package func load(previous: JSONObject? = nil) -> SettingsLoadResult {
        var problems: [SettingsProblem] = []
        if let file = configuration.localFile {
            switch readDocument(atPath: file, source: "file \(file)") {
            case .success(let s):
                let resolved = SettingsFilePaths.resolve(s, relativeTo: SettingsFilePaths.directory(ofFile: file))
                return SettingsLoadResult(settings: resolved, origin: .file(file), problems: [])
            case .failure(let e): problems += e.problems
            }
        } else {
            switch fetch() {
            case .success(let (settings, raw)):
                if let problem = writeCache(raw) { problems.append(problem) }
                let url = (try? settingsURL.get())?.absoluteString ?? configuration.cdnHost
                return SettingsLoadResult(settings: settings, origin: .network(url), problems: problems)
            case .failure(let e): problems += e.problems
            }
        }
        if let previous {
            return SettingsLoadResult(settings: previous, origin: .previous, problems: problems)
        }
        return fallback(problems: problems)
    }

    /// Settings available without the network: the local file if one is configured, else the
    /// cached copy → defaults → built-in. What a client starts with before its first fetch.
    package func loadWithoutNetwork() -> SettingsLoadResult {
        configuration.localFile != nil ? load() : fallback(problems: [])
    }

    /// The fallback chain: cached copy → configured defaults → built-in.
    private func fallback(problems: [SettingsProblem]) -> SettingsLoadResult {
        var problems = problems
        if let cache = cachePath, FileManager.default.fileExists(atPath: cache) {
            switch readDocument(atPath: cache, source: "cache \(cache)") {
            case .success(let s): return SettingsLoadResult(settings: s, origin: .cache(cache), problems: problems)
            case .failure(let e): problems += e.problems
            }
        }
        if let defaults = configuration.defaultSettings {
            let found = SettingsValidator.problems(in: .object(defaults), source: "defaults")
            if found.isEmpty { return SettingsLoadResult(settings: defaults, origin: .defaults, problems: problems) }
            problems += found
        }
        return SettingsLoadResult(settings: builtIn(), origin: .builtIn, problems: problems)
    }

    /// The last-resort settings: upload to Segment only.
    package func builtIn() -> JSONObject {
        ["integrations": ["Segment.io": ["apiKey": .string(configuration.writeKey), "apiHost": .string(configuration.defaultAPIHost)]]]
    }

    /// Fetches and validates settings from the CDN (no fallbacks, no cache).
    package func fetch() -> Result<(JSONObject, [UInt8]), SettingsSourceError> {
        let url: URL
        switch settingsURL {
        case .success(let u): url = u
        case .failure(let e): return .failure(SettingsSourceError(SettingsProblem(source: "network", message: e.description)))
        }
        let source = "network \(url.absoluteString)"
        let request = HTTPRequest(method: "GET", url: url, headers: [("Accept", "application/json")], timeout: configuration.timeout)
        switch client.send(request) {
        case .failure(let e):
            return .failure(SettingsSourceError(SettingsProblem(source: source, message: "fetch failed: \(e)")))
        case .success(let response):
            guard (200..<300).contains(response.status) else {
                let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
                return .failure(SettingsSourceError(SettingsProblem(source: source, message: "HTTP \(response.status)\(snippet.isEmpty ? "" : ": \(snippet)")")))
            }
            return Self.parse(response.body, source: source).map { ($0, response.body) }
        }
    }

    /// Parses and validates a settings document.
    package static func parse(_ bytes: [UInt8], source: String) -> Result<JSONObject, SettingsSourceError> {
        let json: JSON
        do { json = try JSON(parsing: bytes) } catch {
            return .failure(SettingsSourceError(SettingsProblem(source: source, message: error.description)))
        }
        let found = SettingsValidator.problems(in: json, source: source)
        guard found.isEmpty, let object = json.objectValue else { return .failure(SettingsSourceError(found)) }
        return .success(object)
    }

    private func readDocument(atPath path: String, source: String) -> Result<JSONObject, SettingsSourceError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(SettingsSourceError(SettingsProblem(source: source, message: "cannot read the file")))
        }
        return Self.parse([UInt8](data), source: source)
    }

    /// Stores fetched settings (atomically: a crash leaves the old copy or the new one).
    private func writeCache(_ raw: [UInt8]) -> SettingsProblem? {
        guard let path = cachePath else { return nil }
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(raw).write(to: URL(fileURLWithPath: path), options: .atomic)
            return nil
        } catch {
            return SettingsProblem(source: "cache \(path)", message: "cannot write the cache: \(error.localizedDescription)")
        }
    }
}

/// Where a client gets its settings.
public enum SettingsLocation: Sendable, Equatable {
    /// Only `Configuration.defaultSettings` (or the built-in Segment-only settings).
    case defaultsOnly
    /// A JSON file in the CDN shape, read at start and on every refresh (edit it to reconfigure).
    case file(String)
    /// `<host>/v1/projects/<writeKey>/settings`, cached on disk. The client starts at once on the
    /// cached copy (or the defaults) and applies the fetched settings as a refresh.
    case cdn(host: String)

    public static let segmentCDN = SettingsLocation.cdn(host: "cdn-settings.segment.com")
}
