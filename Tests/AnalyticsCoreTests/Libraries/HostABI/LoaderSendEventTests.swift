import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// `send_event` from a library never blocks while holding shared locks: AH_OK means the event is
/// queued for every destination it goes to, AH_ERR_RETRYABLE that it was queued nowhere (a full
/// queue, or a host that can no longer deliver). At shutdown libraries stop before the
/// destinations they feed, Segment.io last, so what they send while stopping is delivered.
@Suite struct LoaderSendEventTests {
    func load(_ fixture: String, in dir: String) throws -> NativeLibrary {
        try PluginLoader().load(file: try FixtureBuilder.library(fixture, in: dir))
    }

    func fileLibrary(in dir: String) throws -> NativeLibrary {
        try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))
    }

    @Test func aFullQueueAnswersRetryableAtOnceAndQueuesTheEventNowhere() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let entered = FixturePipe(), release = FixturePipe()
        let errors = ErrorLog()
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": [
            "Hang": ["entered_fd": .number(Double(entered.writeEnd)), "release_fd": .number(Double(release.readEnd))],
            "File": ["path": .string(output)],
        ]])
        config.integrationFactories = [try load("hang", in: dir), try fileLibrary(in: dir)].map { NativeIntegrationFactory(library: $0) }
        config.destinationQueueCapacity = 1
        // As `run` does: callers wait for room (here for up to 5 s, then the oldest is dropped).
        config.destinationOverflow = .wait(seconds: 5)
        config.errorHandler = errors.handler
        let analytics = Analytics(configuration: config)
        // A library instance fed by the test, whose host services are the client's.
        let echo = try load("send_back", in: dir).makeInstance(services: .forwarding(to: analytics, key: "Echo"))
        defer { echo.destroy() }

        let onlyHang: JSONObject = ["All": false, "Hang": true]
        analytics.track("Hang", integrations: onlyHang)
        entered.awaitByte()  // Hang's hook is in flight and will stay there
        analytics.track("Queued", integrations: onlyHang)  // Hang's queue (capacity 1) is now full

        let started = monotonicSeconds()
        #expect(echo.deliver(.make(.track, ["event": "Original"])) == .retryable("host refused the echo (status 1)"))
        #expect(monotonicSeconds() - started < 2, "send_event must not wait for room")
        let file = try #require(analytics.timeline.stats(forKey: "File"))
        let hang = try #require(analytics.timeline.stats(forKey: "Hang"))
        #expect(file.received == 0, "all or nothing: the refused echo reached no queue")
        #expect(hang.overflowed == 0)

        release.release(count: 2)
        #expect(analytics.flush())
        #expect(echo.deliver(.make(.track, ["event": "Original"])) == .ok)
        #expect(analytics.flush())
        #expect(readJSONLines(output).map { $0["event"] } == ["Echo"])
        #expect((hang.delivered, hang.overflowed, hang.skipped) == (3, 0, 0))
        #expect(analytics.shutdown())
        #expect(errors.messages.isEmpty)
    }

    @Test func eventsSentWhileStoppingReachSegmentIoWhichStopsLast() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let output = dir + "/out.ndjson"
        let result = FixturePipe()
        let libraries = [try load("stop_sender", in: dir), try fileLibrary(in: dir)]
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir + "/state") { config in
            config.defaultSettings = Settings(["integrations": [
                "Segment.io": ["apiKey": .string(SegmentHarness.writeKey), "httpConfig": SegmentHarness.fastBackoff],
                "StopSender": ["result_fd": .number(Double(result.writeEnd))],
                "File": ["path": .string(output)],
            ]])
            config.integrationFactories = libraries.map { NativeIntegrationFactory(library: $0) }
        }
        h.analytics.track("Before")
        #expect(h.analytics.shutdown())
        #expect(result.readLine() == "stopping=0")
        #expect(result.readLine() == "destroyed=0")
        let uploaded = try server.batches().flatMap { batch -> [String] in
            let body = try JSON(parsing: batch.request.body)
            return (body["batch"]?.arrayValue ?? []).compactMap { $0["event"]?.stringValue }
        }
        #expect(uploaded.sorted() == ["Before", "Destroyed", "Stopping"])
        // File still ran when StopSender heard STOPPING; both then stopped together, so the event
        // sent from destroy went to the destination still running: Segment.io.
        #expect(readJSONLines(output).map { $0["event"] } == ["Before", "Stopping"])
        #expect(h.errors.messages.isEmpty)

        // Once the pipeline can no longer deliver, send_event answers retryable.
        let late = HostServices.forwarding(to: h.analytics, key: "Late")
        #expect(late.sendEvent(Array(#"{"type":"track","event":"After"}"#.utf8)) == .retryable("the host is stopping"))
    }
}
