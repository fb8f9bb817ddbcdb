import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Loaded libraries inside a real client: created from settings by their factory, fed by their
/// own worker, retried, reported.
@Suite struct LoaderNativeDestinationTests {
    static let quickRetries = NativeRetryPolicy(maxAttempts: 4, initialDelay: 0.001, maxDelay: 0.004)

    struct Client {
        let analytics: Analytics
        let errors: ErrorLog
        let logs: Locked<[String]>
    }

    /// A client whose factories are the given libraries, with `integrations` as its settings.
    func client(_ libraries: [NativeLibrary], integrations: JSONObject, storage: String,
                retryPolicy: NativeRetryPolicy = quickRetries,
                destinationMiddleware: [String: [Middleware]] = [:]) -> Client {
        let errors = ErrorLog()
        let logs = Locked<[String]>([])
        var configuration = Configuration(writeKey: "wk", storageDirectory: storage)
        configuration.settingsLocation = .defaultsOnly
        configuration.trackApplicationLifecycleEvents = false
        configuration.defaultSettings = Settings(["integrations": .object(integrations)])
        configuration.integrationFactories = libraries.map { NativeIntegrationFactory(library: $0, retryPolicy: retryPolicy) }
        configuration.errorHandler = errors.handler
        configuration.destinationMiddleware = destinationMiddleware
        configuration.logHandler = { _, message in logs.withLock { $0.append(message) } }
        return Client(analytics: Analytics(configuration: configuration), errors: errors, logs: logs)
    }

    func load(_ fixture: String, in dir: String, defines: [String] = []) throws -> NativeLibrary {
        try PluginLoader().load(file: try FixtureBuilder.library(fixture, in: dir, defines: defines))
    }

    func fileLibrary(in dir: String) throws -> NativeLibrary {
        try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))
    }

    @Test func retryableFailuresAreRetriedWithBackoffUntilTheyPass() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let c = client([try load("flaky", in: dir)], integrations: ["Flaky": ["failures": 2]], storage: dir + "/state")
        #expect(c.analytics.find(key: "Flaky") is NativeDestination)
        c.analytics.track("Eventually")
        #expect(c.analytics.flush())
        let stats = try #require(c.analytics.timeline.stats(forKey: "Flaky"))
        #expect(stats.delivered == 1)
        #expect(stats.failed == 0)
        #expect(c.errors.messages.isEmpty)
        #expect(c.analytics.shutdown())
    }

    @Test func exhaustedRetriesAreReportedAndCounted() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let c = client([try load("flaky", in: dir)], integrations: ["Flaky": ["failures": 5]], storage: dir + "/state",
                       retryPolicy: NativeRetryPolicy(maxAttempts: 2, initialDelay: 0.001, maxDelay: 0.001))
        c.analytics.track("Never")
        #expect(c.analytics.flush())
        #expect(c.errors.messages == ["plugin Flaky: track failed after 2 attempts: upstream unavailable (attempt 2)"])
        #expect(c.analytics.timeline.stats(forKey: "Flaky")?.failed == 1)
        #expect(c.analytics.shutdown())
    }

    @Test func permanentFailuresAreReportedWithoutRetry() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let c = client([try load("flaky", in: dir)], integrations: ["Flaky": ["failures": 0]], storage: dir + "/state")
        c.analytics.group(groupId: "g-1")
        c.analytics.identify(userId: "u-1")
        #expect(c.analytics.flush())
        #expect(c.errors.messages == [
            "plugin Flaky: group failed: group calls are not supported by this destination",
            "plugin Flaky: identify failed: identify returned unknown status 42: odd",
        ])
        #expect(c.analytics.timeline.stats(forKey: "Flaky")?.failed == 2)
        #expect(c.analytics.shutdown())
    }

    @Test func failingCreateIsReportedWithTheLibrarysText() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let c = client([try load("create_fails", in: dir)], integrations: ["NeedsKey": [:]], storage: dir + "/state")
        #expect(c.analytics.find(key: "NeedsKey") == nil)
        #expect(c.errors.messages.count == 1)
        #expect(c.errors.messages.first?.contains("plugin NeedsKey: could not be created: ") == true)
        #expect(c.errors.messages.first?.contains("create of integration \"NeedsKey\" failed: settings have no \"apiKey\" (got 2 bytes of settings)") == true)
        #expect(c.analytics.shutdown())
    }

    @Test func fileDestinationWritesTheClientsEventsAndFlushesOnShutdown() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let c = client([try fileLibrary(in: dir)], integrations: ["File": ["path": .string(output)]], storage: dir + "/state")
        c.analytics.track("One", properties: ["n": 1])
        c.analytics.screen("Home")
        #expect(c.analytics.flush())
        #expect(readJSONLines(output).map { $0["event"] ?? $0["name"] } == ["One", "Home"])
        c.analytics.track("Two")
        #expect(c.analytics.shutdown())
        let written = readJSONLines(output)
        #expect(written.map(\.["type"]) == ["track", "screen", "track"])
        #expect(written.allSatisfy { $0["messageId"] != nil && $0[path: "context.library.name"] != nil })
        #expect(c.errors.messages.isEmpty)
    }

    /// Destination middleware and the per-call integrations option act on loaded libraries exactly
    /// as on in-process destinations: for that destination only.
    @Test func destinationMiddlewareAndTheIntegrationsOptionActOnLoadedDestinations() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let fileOnly = BlockMiddleware { ctx, next in
            if ctx.payload?.event == "Secret" { return }
            if ctx.payload?.event == "Rename Me" { return next(ctx.modify { $0.payload?.event = "Renamed" }) }
            next(ctx)
        }
        let c = client([try fileLibrary(in: dir), try load("noop", in: dir, defines: ["KEY=\"Other\""])],
                       integrations: ["File": ["path": .string(output)], "Other": [:]], storage: dir + "/state",
                       destinationMiddleware: ["File": [fileOnly]])
        c.analytics.track("Secret")
        c.analytics.track("Rename Me")
        c.analytics.track("Not For File", integrations: ["File": false])
        c.analytics.track("Only File", integrations: ["All": false, "File": true])
        #expect(c.analytics.flush())
        #expect(readJSONLines(output).map { $0["event"] } == ["Renamed", "Only File"])
        let file = try #require(c.analytics.timeline.stats(forKey: "File"))
        let other = try #require(c.analytics.timeline.stats(forKey: "Other"))
        #expect((file.delivered, file.dropped, file.skipped) == (2, 1, 1))
        #expect((other.delivered, other.dropped, other.skipped) == (3, 0, 1), "the middleware is File's alone")
        #expect(c.errors.messages.isEmpty)
    }

    @Test func eventsSentBackByALibraryRunThroughThePipeline() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let c = client([try load("send_back", in: dir), try fileLibrary(in: dir)],
                       integrations: ["Echo": [:], "File": ["path": .string(output), "types": ["track"]]],
                       storage: dir + "/state")
        c.analytics.identify(userId: "u-9")
        c.analytics.track("Original")
        // The echo is queued for File while Echo handles "Original": poll until it arrived.
        let deadline = Date().addingTimeInterval(10)
        var names: [JSON?] = []
        while Date() < deadline {
            #expect(c.analytics.flush())
            names = readJSONLines(output).map { $0["event"] }
            if names.count >= 2 { break }
        }
        #expect(names == ["Original", "Echo"])
        let echo = try #require(readJSONLines(output).last)
        #expect(echo["userId"] == "u-9")
        #expect(echo["anonymousId"] == .string(c.analytics.anonymousId))
        #expect(echo["messageId"] != nil, "the client filled in what the library left out")
        #expect(echo[path: "context.library.name"] != nil, "enrichment ran on the echo")
        #expect(c.logs.withLock { $0 }.contains { $0.hasPrefix("Echo: echoed user=u-9 ") })
        #expect(c.errors.messages.isEmpty)
        #expect(c.analytics.shutdown())
    }
}
