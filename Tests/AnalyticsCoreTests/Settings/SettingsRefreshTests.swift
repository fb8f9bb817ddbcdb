import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct SettingsRefreshTests {
    @Test func fileSettingsRefreshCreatesAndDestroysDestinationsAndKeepsGoodSettingsOnErrors() throws {
        let dir = makeTempDirectory("settings-file")
        let file = dir + "/settings.json"
        try #"{"integrations":{"A":{"v":1}},"unknownTopLevel":{"kept":true}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let a = RecordingFactory("A"), b = RecordingFactory("B")
        let errors = ErrorLog()
        var config = Configuration(writeKey: "k", storageDirectory: dir + "/storage")
        config.trackApplicationLifecycleEvents = false
        config.settingsLocation = .file(file)
        config.integrationFactories = [a, b]
        config.errorHandler = errors.handler
        let analytics = Analytics(configuration: config)
        #expect(analytics.settings.json["unknownTopLevel"] == ["kept": true], "unknown keys pass through")
        #expect(a.made.withLock { $0.count } == 1 && b.made.withLock { $0.isEmpty })

        // Malformed: the error names the JSON path, the settings in force stay.
        try #"{"integrations":{"A":{"v":1},"B":true}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(analytics.refreshSettings() == .previous)
        #expect(errors.messages.contains { $0.contains("integrations.B") }, "\(errors.messages)")
        #expect(b.made.withLock { $0.isEmpty })

        // A refresh that swaps A for B: B is created with the new settings, A is destroyed.
        try #"{"integrations":{"B":{"v":2}}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(analytics.refreshSettings() == .file(file))
        analytics.track("after refresh")
        #expect(analytics.flush())
        let madeA = try #require(a.made.withLock { $0.first })
        let madeB = try #require(b.made.withLock { $0.first })
        #expect(madeA.recorded.shutdowns == 1)
        #expect(madeB.names == ["after refresh"])
        #expect(madeB.recorded.settings.first?.0.integrationSettings(forKey: "B") == ["v": 2])
        analytics.shutdown()
    }

    @Test func cdnSettingsAreFetchedInTheBackgroundCachedAndUsedOffline() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let body = #"{"integrations":{"Fetched":{"from":"cdn"}},"plan":{}}"#
        server.enqueue(.json(body), path: "/v1/projects/wk/settings")
        let dir = makeTempDirectory("settings-cdn")
        let fetched = RecordingFactory("Fetched")
        var config = Configuration(writeKey: "wk", storageDirectory: dir)
        config.trackApplicationLifecycleEvents = false
        config.settingsLocation = .cdn(host: server.baseURL)
        config.defaultSettings = settings(enabling: ["Default"])
        config.integrationFactories = [fetched]
        config.errorHandler = { _ in }
        let first = Analytics(configuration: config)
        // It starts on the defaults at once, then the fetched settings arrive as a refresh.
        let deadline = monotonicSeconds() + 10
        while fetched.made.withLock({ $0.isEmpty }) && monotonicSeconds() < deadline { usleep(1000) }
        #expect(fetched.made.withLock { $0.count } == 1)
        #expect(first.settings.integrationSettings(forKey: "Fetched") == ["from": "cdn"])
        first.shutdown()

        // Server gone: a new client starts from the cache, with no network at all.
        server.stop()
        let second = Analytics(configuration: config)
        #expect(second.settings.integrationSettings(forKey: "Fetched") == ["from": "cdn"])
        second.shutdown()
    }

    @Test func periodicRefreshReachesPluginsAsRefresh() throws {
        let dir = makeTempDirectory("settings-periodic")
        let file = dir + "/settings.json"
        try #"{"integrations":{"D":{}}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let probe = ProbePlugin(.utility, "u")
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.trackApplicationLifecycleEvents = false
        config.settingsLocation = .file(file)
        config.settingsRefreshInterval = 0.05
        config.plugins = [probe]
        let analytics = Analytics(configuration: config)
        let deadline = monotonicSeconds() + 10
        while probe.seen.updates.count < 3 && monotonicSeconds() < deadline { usleep(1000) }
        #expect(Array(probe.seen.updates.prefix(3)) == [.initial, .refresh, .refresh])
        analytics.shutdown()
    }
}
