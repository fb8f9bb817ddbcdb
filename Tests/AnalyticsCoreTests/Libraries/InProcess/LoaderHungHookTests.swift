import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// A hook that never returns: at shutdown its destination is abandoned after `hookTimeout`, its
/// undelivered events (in flight and queued) are counted as abandoned and reported with the
/// library, hook and event, `destroy` is never called on it, and the host goes on.
@Suite struct LoaderHungHookTests {

    /// Whether the library wrote to `pipe` (without waiting).
    func hasByte(_ pipe: FixturePipe) -> Bool {
        var poller = pollfd(fd: pipe.readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) == 1
    }

    @Test func aHungHookIsAbandonedCountedReportedAndNeverDestroyed() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let entered = FixturePipe(), release = FixturePipe(), destroyed = FixturePipe()
        let hangFile = try FixtureBuilder.library("hang", in: dir)
        let libraries = [try PluginLoader().load(file: hangFile),
                         try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))]
        let errors = ErrorLog()
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": [
            "Hang": ["entered_fd": .number(Double(entered.writeEnd)), "release_fd": .number(Double(release.readEnd)),
                     "destroyed_fd": .number(Double(destroyed.writeEnd))],
            "File": ["path": .string(output)],
        ]])
        config.integrationFactories = libraries.map { NativeIntegrationFactory(library: $0) }
        config.errorHandler = errors.handler
        config.flushTimeout = 5
        config.hookTimeout = 2
        let analytics = Analytics(configuration: config)

        analytics.track("Before")
        analytics.track("Hang")
        entered.awaitByte()
        analytics.track("After 1")
        analytics.track("After 2")
        #expect(!analytics.shutdown())

        let hang = try #require(analytics.timeline.stats(forKey: "Hang"))
        let file = try #require(analytics.timeline.stats(forKey: "File"))
        #expect((hang.received, hang.delivered, hang.abandoned) == (4, 1, 3))
        #expect((file.delivered, file.abandoned) == (4, 0), "the other destination is not held up")
        #expect(readJSONLines(output).map { $0["event"] } == ["Before", "Hang", "After 1", "After 2"])
        let messageId = try #require(readJSONLines(output).first { $0["event"] == "Hang" }?["messageId"]?.stringValue)
        #expect(errors.messages == [
            "plugin Hang: library \(hangFile): track while delivering track \"Hang\" event \(messageId) did not return within 2.0 s; "
                + "abandoned with 3 events undelivered (counted as abandoned); destroy not called",
        ])
        #expect(!hasByte(destroyed), "destroy is not called on a hung instance")

        // When the hook finally returns, the host calls nothing more on that instance.
        release.release()
        let worker = try #require(analytics.timeline.worker(forKey: "Hang"))
        #expect(worker.waitStopped(until: monotonicSeconds() + 10))
        #expect(!hasByte(destroyed))
        #expect((hang.delivered, hang.abandoned, hang.failed) == (1, 3, 0))
    }
}

/// While the run goes on: a producer waiting for room behind a hook stuck for `hookTimeout`
/// abandons that destination instead of waiting (or dropping) any longer.
@Suite struct LoaderHungHookWhileRunningTests {
    @Test func aCallerWaitingBehindAHungHookAbandonsItAndGoesOn() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let entered = FixturePipe(), release = FixturePipe()
        let hangFile = try FixtureBuilder.library("hang", in: dir)
        let errors = ErrorLog()
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": [
            "Hang": ["entered_fd": .number(Double(entered.writeEnd)), "release_fd": .number(Double(release.readEnd))],
        ]])
        config.integrationFactories = [NativeIntegrationFactory(library: try PluginLoader().load(file: hangFile))]
        config.errorHandler = errors.handler
        config.destinationQueueCapacity = 2
        config.destinationOverflow = .wait(seconds: 60)  // far longer than the test may take
        config.hookTimeout = 0.5
        config.flushTimeout = 5
        let analytics = Analytics(configuration: config)
        defer { release.release() }  // let the fixture's thread end

        analytics.track("Hang")
        entered.awaitByte()
        analytics.track("A")
        analytics.track("B")  // the queue is full
        let started = monotonicSeconds()
        analytics.track("C")  // waits, sees no progress for 0.5 s, abandons Hang
        #expect(monotonicSeconds() - started < 30, "the caller is not held for the whole wait")
        analytics.track("D")  // counted at once
        let hang = try #require(analytics.timeline.stats(forKey: "Hang"))
        #expect((hang.received, hang.delivered, hang.abandoned, hang.overflowed) == (5, 0, 5, 0))
        #expect(errors.messages.count == 1)
        #expect(errors.messages.first?.hasPrefix("plugin Hang: library \(hangFile): track while delivering track \"Hang\" event ") == true)
        #expect(errors.messages.first?.hasSuffix("did not return within 0.5 s; abandoned with 4 events undelivered "
            + "(counted as abandoned, as are later ones); destroy not called") == true, "\(errors.messages)")
        #expect(analytics.flush(), "flush does not wait for an abandoned destination")
        #expect(!analytics.shutdown(), "it never stopped")
        #expect(errors.messages.count == 1)
    }
}
