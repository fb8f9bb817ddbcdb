import AnalyticsTestSupport
import Foundation
import LoopbackHTTP
import Testing
@testable import AnalyticsCore

/// Plugins call back into the client from inside the pipeline: analytics-swift plugins call
/// `analytics.track` from their hooks, a LivePlugin scoped to Segment.io calls `analytics.track`
/// from `screen()` (analytics-swift-live's addliveplugin.js), a library calls `send_event` from a
/// hook. Segment.io runs inline, on the caller's thread inside the fan-out; a worker may be the
/// one whose queue is full. None of these may wait on what the calling thread holds: each test
/// runs its calls on a thread of its own and fails if they have not returned in time.
@Suite struct ReentryTests {
    /// Runs `body` on a thread of its own; false if it has not returned within `seconds` (then it
    /// is deadlocked and left behind).
    private func finishes(within seconds: Double = 20, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread { body(); done.signal() }.start()
        return done.wait(timeout: .now() + seconds) == .success
    }

    private func uploadedNames(_ server: LoopbackHTTPServer) throws -> [String] {
        try server.batches().flatMap { batch -> [String] in
            guard case .object(let body) = try JSON(parsing: batch.request.body) else { return [] }
            return (body["batch"]?.arrayValue ?? []).compactMap { $0["event"]?.stringValue ?? $0["name"]?.stringValue }
        }
    }

    @Test func swiftPluginInSegmentIOsTimelineTracksFromScreenAndReset() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 100)
        let plugin = CallsBack(.enrichment)
        h.segment.add(plugin: plugin)
        let analytics = h.analytics
        try #require(finishes {
            analytics.screen("Home")
            analytics.reset()
            _ = analytics.flush()
        }, "a plugin of the inline Segment.io destination calling back into the client deadlocked it")
        let names = try uploadedNames(server)
        #expect(names.contains("Home") && names.contains("Seen Home") && names.contains("After Reset"), "\(names)")
        #expect(names.firstIndex(of: "Home")! < names.firstIndex(of: "Seen Home")!, "the call back runs after the event that made it")
        #expect(h.errors.all.isEmpty, "\(h.errors.messages)")
    }

    @Test func swiftPluginOnAFullWorkerTracksFromItsHook() throws {
        let recorder = RecordingDestination("Rec")
        recorder.add(plugin: CallsBack(.enrichment))
        var config = Configuration(writeKey: "wk", storageDirectory: makeTempDirectory("reentry"))
        config.trackApplicationLifecycleEvents = false
        config.autoAddSegmentDestination = false
        config.settingsLocation = .defaultsOnly
        config.defaultSettings = Settings(["integrations": ["Rec": [:]]])
        config.plugins = [recorder]
        // One slot and waiting producers: a worker whose own hook tracks would wait for itself.
        config.destinationQueueCapacity = 1
        config.destinationOverflow = .wait(seconds: .infinity)
        let analytics = Analytics(configuration: config)
        try #require(finishes {
            for i in 0..<50 { analytics.track("Ping \(i)") }
            _ = analytics.flush()
        }, "a worker's plugin calling track while producers wait for its queue deadlocked")
        // A Pong made while the flush drained runs after it: wait for the last ones.
        #expect(eventually { recorder.names.filter { $0.hasPrefix("Pong") }.count == 50 }, "every call back delivered: \(recorder.names.count)")
        #expect(recorder.names.filter { $0.hasPrefix("Ping") }.count == 50)
        _ = analytics.shutdown()
    }

    @Test func libraryTimelinePluginScopedToSegmentIOSendsEvents() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(directory) }
        let file = try FixtureBuilder.library("timeline_plugins", in: directory, as: "libt.so", defines: ["SCOPE=\"Segment.io\""])
        let library = try PluginLoader().load(file: file)
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 100, extraKeys: ["Timeliner"]) { config in
            config.integrationFactories = [NativeIntegrationFactory(library: library)]
        }
        let analytics = h.analytics
        try #require(finishes {
            analytics.track("SendBack")
            _ = analytics.flush()
        }, "send_event from a library plugin in Segment.io's timeline deadlocked")
        let names = try uploadedNames(server)
        #expect(names == ["SendBack", "Echo"], "\(names)")
        _ = analytics.shutdown()
    }

    @Test(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
    func livePluginScopedToSegmentIOTracksFromScreen() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let bundle = """
        class TrackScreens extends LivePlugin {
            screen(event) {
                analytics.track("Screen Seen", { screen: event.name })
                return event
            }
        }
        analytics.add(new TrackScreens(LivePluginType.enrichment, "Segment.io"))
        """
        let client = try LiveClient.start(bundle: bundle) { config in
            config.autoAddSegmentDestination = true
            config.segment.apiHost = "\(server.baseURL)/v1"
            config.flushAt = 100
        }
        let analytics = client.analytics
        try #require(finishes {
            analytics.screen("Checkout")
            _ = analytics.flush()
        }, "a LivePlugin scoped to Segment.io calling analytics.track deadlocked the client")
        let names = try uploadedNames(server)
        #expect(names.contains("Checkout") && names.contains("Screen Seen"), "\(names); \(client.observer.errorMessages)")
        _ = analytics.shutdown()
    }
}

/// Calls back into the client from its hooks: a track for every screen and every "Ping", one after
/// every reset (analytics-swift plugins do this).
private final class CallsBack: EventPlugin {
    let type: PluginType
    private let client = Locked<WeakAnalytics?>(nil)
    init(_ type: PluginType) { self.type = type }

    func configure(analytics: Analytics) { client.withLock { $0 = WeakAnalytics(analytics) } }
    private var analytics: Analytics? { client.withLock { $0?.value } }

    func screen(_ event: ScreenEvent) -> ScreenEvent? {
        analytics?.track("Seen \(event.name ?? "")")
        return event
    }
    func track(_ event: TrackEvent) -> TrackEvent? {
        if event.event.hasPrefix("Ping ") { analytics?.track("Pong " + event.event.dropFirst(5)) }
        return event
    }
    func reset() { analytics?.track("After Reset") }
}
