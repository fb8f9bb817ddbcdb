import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The process-mode jail against a hostile library (Tests/Fixtures/hostile.c) run next to the File
/// example in-process: every attack is refused, the host survives it and reports it, and the other
/// destination gets every event.
@Suite struct IsolationJailTests {
    struct Setup {
        let dir: String
        let analytics: Analytics
        let errors: ErrorLog
        let hostileOutput: String
        let fileOutput: String
    }

    func start(hostileSettings: JSONObject = [:], configure: (inout Configuration) -> Void = { _ in }) throws -> Setup {
        let dir = try FixtureBuilder.makeDirectory()
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        try FixtureBuilder.library("hostile", in: plugins)
        try FixtureBuilder.plugin("Plugins/File/file.c", in: plugins, as: "libfile.so")
        let errors = ErrorLog()
        // Its output goes to its own directory (the storage directory the host gives it).
        let own = dir + "/state/plugins/Hostile"
        var settings: JSONObject = ["path": .string(own + "/hostile.ndjson"), "isolation": "process"]
        settings.merge(hostileSettings)
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": ["Hostile": .object(settings), "File": ["path": .string(dir + "/file.ndjson")]]])
        config.pluginsDirectory = plugins
        config.isolation.scanCacheFile = dir + "/scan-cache.json"
        config.errorHandler = errors.handler
        config.destinationOverflow = .wait(seconds: .infinity)
        config.flushTimeout = 60
        config.hookTimeout = 30
        configure(&config)
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        let analytics = Analytics(configuration: config)
        return Setup(dir: dir, analytics: analytics, errors: errors, hostileOutput: own + "/hostile.ndjson", fileOutput: dir + "/file.ndjson")
    }

    func lines(_ path: String) -> [JSON] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSON(parsing: String($0)) }
    }

    @Test func aGarbageResultsFrameEndsThatRunnerAndIsReportedAndTheHostGoesOn() throws {
        let s = try start()
        defer { FixtureBuilder.remove(s.dir) }
        for n in 1...50 { s.analytics.track(n == 20 ? "Garbage" : "E", properties: ["n": .number(Double(n))]) }
        #expect(s.analytics.shutdown())

        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((file.received, file.delivered, file.failed) == (50, 50, 0), "the other destination gets everything")
        #expect(lines(s.fileOutput).count == 50)
        let hostile = try #require(s.analytics.timeline.stats(forKey: "Hostile"))
        #expect(hostile.received == 50)
        #expect(hostile.failed == 1, "the event whose call forged the frame is given up after maxAttempts")
        let seen = Set(lines(s.hostileOutput).compactMap { $0["properties"]?["n"]?.intValue })
        #expect(seen.isSuperset(of: Set(1...50).subtracting([20])), "every other event reached the library")
        let reports = s.errors.messages.filter {
            $0.contains("sent the host a malformed frame (results frame claims 4294967295 outcomes in 4 bytes) and was ended")
        }
        #expect(reports.count == 3, "\(s.errors.messages)")
        #expect(reports.allSatisfy { $0.hasPrefix("plugin Hostile: library \(s.dir)/plugins/libhostile.so (process-isolated)") })
    }
}
