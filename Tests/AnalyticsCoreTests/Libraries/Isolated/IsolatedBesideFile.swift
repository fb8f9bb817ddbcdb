import AnalyticsTestSupport
import Foundation
import Glibc
@testable import AnalyticsCore

/// A client with one fixture library of Tests/Fixtures in process mode (`key`, its `settings`,
/// writing `libraryOutput`) next to the File example in-process (writing `fileOutput`): the
/// set-up of the isolation suites, which differ in the fixture and what it is given.
struct IsolatedBesideFile {
    let dir: String
    let analytics: Analytics
    let errors: ErrorLog
    let libraryOutput: String
    let fileOutput: String

    init(fixture: String, key: String, settings: JSONObject, output: String, in dir: String,
         configure: (inout Configuration) -> Void) throws {
        self.dir = dir
        libraryOutput = output
        fileOutput = dir + "/file.ndjson"
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        try FixtureBuilder.library(fixture, in: plugins)
        try FixtureBuilder.plugin("Plugins/File/file.c", in: plugins, as: "libfile.so")
        errors = ErrorLog()
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": [key: .object(settings), "File": ["path": .string(fileOutput)]]])
        config.pluginsDirectory = plugins
        config.isolation.scanCacheFile = dir + "/scan-cache.json"
        config.errorHandler = errors.handler
        config.destinationOverflow = .wait(seconds: .infinity)
        config.flushTimeout = 60
        config.hookTimeout = 30
        configure(&config)
        analytics = Analytics(configuration: config)
    }
}
