import Foundation
import Testing
@testable import AnalyticsCore

/// A client with loaded ABI 1.2 libraries (built from `Tests/Fixtures/timeline_plugins.c` with the
/// given defines), in-process recording destinations, and every log line and error kept. With
/// `mode: .process` each library runs in its own `analytics-plugin-runner`, as the user's
/// `"isolation": "process"` makes it: the same tests then show that a library cannot tell.
final class ExtensionClient: Sendable {
    let analytics: Analytics
    let errors: ErrorLog
    let logs: Locked<[String]>
    let storage: String
    let directory: String

    struct Library {
        var fixture = "timeline_plugins"
        var name: String
        var defines: [String] = []
        /// A package source built with `make plugins`'s flags instead of a fixture (e.g. an example).
        var source: String? = nil
    }

    init(libraries: [Library], settings: JSONObject, recorders: [RecordingDestination] = [],
         factories: [IntegrationFactory] = [], pluginOptions: [String: JSONObject] = [:],
         destinationMiddleware: [String: [Middleware]] = [:], mode: IsolationMode = .inProcess,
         configure: (inout Configuration) -> Void = { _ in }) throws {
        let directory = try FixtureBuilder.makeDirectory()
        self.directory = directory
        storage = directory + "/state"
        var loaded: [IntegrationFactory] = []
        for library in libraries {
            let file = try library.source.map { try FixtureBuilder.plugin($0, in: directory, as: "lib\(library.name).so") }
                ?? FixtureBuilder.library(library.fixture, in: directory, as: "lib\(library.name).so", defines: library.defines)
            let library = try PluginLoader().load(file: file)
            if mode == .process {
                let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
                loaded.append(ProcessIntegrationFactory(info: library.info, runner: runner))
            } else {
                loaded.append(NativeIntegrationFactory(library: library))
            }
        }
        let errors = ErrorLog()
        let logs = Locked<[String]>([])
        var configuration = Configuration(writeKey: "wk", storageDirectory: storage)
        configuration.settingsLocation = .defaultsOnly
        configuration.trackApplicationLifecycleEvents = false
        configuration.autoAddSegmentDestination = false
        configuration.defaultSettings = Settings(settings)
        configuration.integrationFactories = factories + loaded
        configuration.plugins = recorders
        configuration.pluginOptions = pluginOptions
        configuration.destinationMiddleware = destinationMiddleware
        configuration.errorHandler = errors.handler
        configuration.logHandler = { _, message in logs.withLock { $0.append(message) } }
        configure(&configuration)
        self.errors = errors
        self.logs = logs
        analytics = Analytics(configuration: configuration)
    }

    deinit { FixtureBuilder.remove(directory) }

    var lines: [String] { logs.withLock { $0 } }
    /// Log lines of library `key`, without the "key: " prefix (and without the fixture's
    /// "thread <hook> <id>" lines, which `threads(of:)` reads).
    func lines(of key: String) -> [String] {
        allLines(of: key).filter { !$0.hasPrefix("thread ") }
    }
    func allLines(of key: String) -> [String] {
        lines.compactMap { $0.hasPrefix(key + ": ") ? String($0.dropFirst(key.count + 2)) : nil }
    }
    /// The threads library `key`'s instance hooks ran on: (hook, pthread id).
    func threads(of key: String) -> [(hook: String, thread: UInt)] {
        allLines(of: key).compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "thread", let id = UInt(parts[2]) else { return nil }
            return (String(parts[1]), id)
        }
    }
    func lines(of key: String, starting prefix: String) -> [String] { lines(of: key).filter { $0.hasPrefix(prefix) } }
}
