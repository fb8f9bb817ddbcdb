import AnalyticsTestSupport
import Foundation
import Glibc
@testable import AnalyticsCore

/// The LivePlugins library (Plugins/Live), built from source once per test process with the
/// Makefile's own rule, into a private plugins directory. Without JavaScriptCore's development
/// package the LivePlugins tests are skipped with `LiveLibrary.missing` as the reason.
enum LiveLibrary {
    static let package = "libjavascriptcoregtk-4.1-dev"

    /// Why the library cannot be built here, or nil.
    static let missing: String? = {
        guard let result = try? FixtureBuilder.capture("/usr/bin/env", ["pkg-config", "--exists", "javascriptcoregtk-4.1"]),
              result.status == 0 else {
            return "LivePlugins tests skipped: JavaScriptCore is missing (install the Debian package \(package))"
        }
        return nil
    }()

    static var available: Bool { missing == nil }

    /// The plugins directory holding libliveplugins.so (and nothing else).
    static let built: Result<String, FixtureBuilder.BuildError> = {
        do {
            let dir = makeTempDirectory("loader")
            try FixtureBuilder.run("/usr/bin/make", ["-s", "-C", FixtureBuilder.root, "PLUGINS_DIR=\(dir)", "\(dir)/libliveplugins.so"])
            return .success(dir)
        } catch let error as FixtureBuilder.BuildError {
            return .failure(error)
        } catch {
            return .failure(FixtureBuilder.BuildError(description: "\(error)"))
        }
    }()

    static func directory() throws -> String { try built.get() }
}

/// Log lines and errors of a client, with waits on a deadline (tests never sleep to synchronise).
final class LiveObserver: Sendable {
    private let condition = NSCondition()
    private let lines = Locked<[String]>([])
    private let errorList = Locked<[AnalyticsError]>([])

    var logLines: [String] { lines.withLock { $0 } }
    var errors: [AnalyticsError] { errorList.withLock { $0 } }
    var errorMessages: [String] { errors.map(\.description) }

    var logHandler: @Sendable (LogLevel, String) -> Void {
        { [self] level, message in
            lines.withLock { $0.append("\(level.rawValue): \(message)") }
            condition.lock(); condition.broadcast(); condition.unlock()
        }
    }
    var errorHandler: @Sendable (AnalyticsError) -> Void {
        { [self] error in
            errorList.withLock { $0.append(error) }
            condition.lock(); condition.broadcast(); condition.unlock()
        }
    }

    /// Waits until a log line (or an error) contains `text`; false at the deadline.
    @discardableResult
    func waitFor(_ text: String, timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !contains(text) {
            if !condition.wait(until: deadline) { return contains(text) }
        }
        return true
    }

    func contains(_ text: String) -> Bool {
        logLines.contains { $0.contains(text) } || errorMessages.contains { $0.contains(text) }
    }
}

/// A client with LivePlugins loaded from the built library, recording destinations for `keys`.
struct LiveClient {
    let analytics: Analytics
    let observer: LiveObserver
    let destinations: [String: RecordingDestination]
    let storage: String

    static func start(storage: String = makeTempDirectory("live"), destinations keys: [String] = ["Amplitude", "Mixpanel"],
                      settings extra: JSONObject = [:], options: JSONObject = [:],
                      configure: (inout Configuration) -> Void = { _ in }) throws -> LiveClient {
        let observer = LiveObserver()
        var config = Configuration(writeKey: "live-key", storageDirectory: storage)
        config.trackApplicationLifecycleEvents = false
        var json: JSONObject = ["integrations": ["Segment.io": ["apiKey": "live-key"]]]
        for key in keys { json["integrations"]?[key] = ["apiKey": .string("key-\(key)")] }
        json.merge(extra)
        config.defaultSettings = Settings(json)
        config.settingsLocation = .defaultsOnly
        config.autoAddSegmentDestination = false
        config.pluginsDirectory = try LiveLibrary.directory()
        config.pluginOptions["LivePlugins"] = options
        // In process mode its runner reads the fallback bundle the application gives it.
        if let bundle = options["fallbackBundle"]?.stringValue {
            config.isolation.grants["LivePlugins"] = JailGrants(read: [(bundle as NSString).deletingLastPathComponent])
        }
        config.errorHandler = observer.errorHandler
        config.logHandler = observer.logHandler
        var recording: [String: RecordingDestination] = [:]
        for key in keys {
            let d = RecordingDestination(key)
            recording[key] = d
            config.plugins.append(d)
        }
        configure(&config)
        return LiveClient(analytics: Analytics(configuration: config), observer: observer, destinations: recording, storage: storage)
    }

    /// A client whose LivePlugins start on `bundle` (JavaScript source) as their fallback bundle.
    static func start(bundle: String, configure: (inout Configuration) -> Void = { _ in }) throws -> LiveClient {
        try start(options: ["fallbackBundle": .string(try writeBundle(bundle))], configure: configure)
    }

    subscript(_ key: String) -> RecordingDestination { destinations[key]! }
}

/// Writes a bundle into a fresh directory and returns its path.
func writeBundle(_ source: String, name: String = "bundle.js") throws -> String {
    let dir = makeTempDirectory("bundle")
    let path = dir + "/" + name
    try source.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}
