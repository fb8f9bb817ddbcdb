// Code written the way an analytics-swift user writes it. The only change from an analytics-swift
// app is the import (`import AnalyticsCore` instead of `import Segment`): no @testable, no typed
// JSON, no internal helpers in the part marked "application code". Each test then checks what a
// real loopback Segment server received, or what a real destination saw.
import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

// MARK: - Application code (analytics-swift style)

struct Purchase: Codable {
    let sku: String
    let price: Double
    let quantity: Int
    let at: Date
}

struct Company: Codable {
    let name: String
    let employees: Int
}

/// A destination plugin an analytics-swift user writes: a plain class with `var`s (no lock, no
/// `@unchecked Sendable`).
final class CountingDestination: SerialDestinationPlugin {
    let key = "Counting"
    var tracks = 0
    var lastEvent: String?

    func track(_ event: TrackEvent) -> TrackEvent? {
        tracks += 1
        lastEvent = event.event
        return event
    }
}

/// A utility plugin with a version, as in analytics-swift.
final class Diagnostics: UtilityPlugin, VersionedPlugin {
    static func version() -> String { "2.1.0" }
}

/// Runs the calls of the example of docs/analytics-swift.md against `analytics`.
func applicationCode(_ analytics: Analytics, userName: String, plan: String, seats: Int) {
    analytics.identify(userId: "user-1", traits: ["name": userName, "plan": plan])
    analytics.track(name: "Signed Up", properties: ["plan": plan, "seats": seats, "trial": true, "ratio": 0.5])
    analytics.track(name: "Purchased", properties: Purchase(sku: "T-1", price: 19.99, quantity: 2,
                                                           at: Date(timeIntervalSince1970: 1_700_000_000.25)))
    analytics.screen(title: "Home", category: "Main", properties: ["from": "menu"])
    analytics.screen(title: "Settings")
    analytics.group(groupId: "acme", traits: ["name": "Acme", "employees": 12])
    analytics.group(groupId: "initech", traits: Company(name: "Initech", employees: 300))
    analytics.track(name: "Bare")
    analytics.track(name: "Nil properties", properties: nil)
    let extra: [String: Any] = ["tags": ["a", "b"], "nested": ["deep": [1, 2.5]], "missing": Optional<String>.none as Any]
    analytics.track(name: "Any", properties: extra)
    analytics.alias(newId: "user-2")
}

/// The example of docs/analytics-swift.md, verbatim but for the configuration's
/// endpoint (a loopback server) so that it runs.
func readmeExample(apiHost: String, userName: String, plan: String, seats: Int, purchase: Purchase, url: URL) -> Analytics {
    let analytics = Analytics(configuration: Configuration(writeKey: "WRITE_KEY")
        .flushAt(3)
        .trackApplicationLifecycleEvents(false)
        .operatingMode(.synchronous)       // flush(completion:) blocks; .asynchronous (default) does not
        .storageMode(.memory(1000))        // tests and short-lived tools: nothing left on disk
        .apiHost(apiHost).settingsLocation(.defaultsOnly)
        .defaultSettings(Settings(["integrations": ["Segment.io": ["apiKey": "WRITE_KEY"]]])))
    analytics.identify(userId: "u-1", traits: ["name": userName, "plan": plan])
    analytics.track(name: "Signed Up", properties: ["plan": plan, "seats": seats])
    analytics.track(name: "Purchased", properties: purchase)           // any Encodable
    analytics.screen(title: "Home", category: "Main", properties: ["from": "menu"])
    analytics.group(groupId: "acme", traits: ["employees": 12])
    analytics.alias(newId: "u-2")
    analytics.openURL(url, options: ["source": "mail"])               // "Deep Link Opened" + referrer
    analytics.add { event in guard var event else { return nil }; event.context["app"] = "x"; return event }
    analytics.flush { print("flushed") }
    return analytics
}

/// More analytics-swift shapes that must compile (nil arguments, typed JSON, defaults, trailing
/// closures); run on a disabled client.
func moreAnalyticsSwiftShapes(_ analytics: Analytics, json: JSONObject, name: String?) {
    analytics.track(name: "a", properties: nil)
    analytics.track(name: "b", properties: json)
    analytics.track(name: "c", properties: ["name": name as Any])
    analytics.identify(userId: "u", traits: nil)
    analytics.identify(traits: ["email": "a@b.c"])
    analytics.screen(title: "t", properties: nil)
    analytics.screen(title: "t", category: nil, properties: ["k": 1])
    analytics.group(groupId: "g", traits: nil)
    analytics.group(groupId: "g")
    analytics.openURL(URL(string: "x://y")!)
    analytics.flush()
    analytics.flush { }
    analytics.reset()
    _ = analytics.version()
    _ = analytics.userId
    _ = analytics.anonymousId
    _ = analytics.hasUnsentEvents
}

// MARK: - Tests

@Suite struct AnalyticsSwiftStyleTests {
    /// A client configured with the builder, uploading to a loopback server, memory storage.
    static func client(server: LoopbackHTTPServer, errors: Locked<[String]>, mode: OperatingMode = .synchronous,
                       plugins: [Plugin] = []) -> Analytics {
        var configuration = Configuration(writeKey: "KEY")
            .flushAt(100)
            .flushInterval(3600)
            .trackApplicationLifecycleEvents(false)
            .apiHost("\(server.baseURL)/v1")
            .settingsLocation(.defaultsOnly)
            .defaultSettings(Settings(["integrations": ["Segment.io": ["apiKey": "KEY"]]]))
            .storageMode(.memory(1000))
            .operatingMode(mode)
            .errorHandler { error in errors.withLock { $0.append(error.description) } }
        for plugin in plugins { configuration = configuration.add(plugin: plugin) }
        return Analytics(configuration: configuration)
    }

    static func received(_ server: LoopbackHTTPServer) throws -> [JSON] {
        try server.requests.flatMap { request -> [JSON] in
            try JSON(parsing: request.body)["batch"]?.arrayValue ?? []
        }
    }

    @Test func analyticsSwiftCallShapesProduceTheRightEventsOnTheWire() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: server, errors: errors)
        applicationCode(analytics, userName: "Ada", plan: "pro", seats: 3)
        analytics.flush()
        let events = try Self.received(server)
        #expect(events.count == 11)
        #expect(errors.withLock { $0 }.isEmpty)
        guard events.count == 11 else { return }

        #expect(events[0]["type"] == "identify")
        #expect(events[0]["userId"] == "user-1")
        #expect(events[0]["traits"] == ["name": "Ada", "plan": "pro"])

        #expect(events[1]["event"] == "Signed Up")
        #expect(events[1]["properties"] == ["plan": "pro", "ratio": 0.5, "seats": 3, "trial": true])
        #expect(events[1]["userId"] == "user-1")

        let purchase = try #require(events[2]["properties"]?.objectValue)
        #expect(purchase["sku"] == "T-1")
        #expect(purchase["price"] == 19.99)
        #expect(purchase["quantity"] == 2)
        #expect(purchase["at"] == "2023-11-14T22:13:20.250Z")

        #expect(events[3]["type"] == "screen")
        #expect(events[3]["name"] == "Home")
        #expect(events[3]["category"] == "Main")
        #expect(events[3]["properties"] == ["from": "menu"])
        #expect(events[4]["name"] == "Settings")
        #expect(events[4]["category"] == nil)

        #expect(events[5]["groupId"] == "acme")
        #expect(events[5]["traits"] == ["employees": 12, "name": "Acme"])
        #expect(events[6]["groupId"] == "initech")
        #expect(events[6]["traits"]?["employees"] == 300)

        #expect(events[7]["event"] == "Bare")
        #expect(events[7]["properties"] == [:])
        #expect(events[8]["properties"] == [:])
        #expect(events[9]["properties"] == ["missing": nil, "nested": ["deep": [1, 2.5]], "tags": ["a", "b"]])

        #expect(events[10]["type"] == "alias")
        #expect(events[10]["previousId"] == "user-1")
        #expect(events[10]["userId"] == "user-2")
        #expect(events.allSatisfy { $0["context"]?["library"]?["version"] == .string(Analytics.version()) })
        #expect(analytics.shutdown())
    }

    @Test func theReadmeExampleRuns() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let analytics = readmeExample(apiHost: "\(server.baseURL)/v1", userName: "Ada", plan: "pro", seats: 2,
                                      purchase: Purchase(sku: "S", price: 1, quantity: 1, at: Date()),
                                      url: URL(string: "myapp://home")!)
        let events = try Self.received(server)
        #expect(events.map { $0["type"]?.stringValue ?? "" } == ["identify", "track", "track", "screen", "group", "alias", "track"])
        #expect(events.last?["event"] == "Deep Link Opened")
        #expect(analytics.shutdown())
    }

    @Test func valuesWithoutAJSONFormAreReportedByPathAndTheRestIsSent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: server, errors: errors)
        let properties: [String: Any] = ["ok": "yes", "object": NSObject(), "nan": Double.nan,
                                         "list": [1, NSObject()], "byInt": [1: "one"]]
        analytics.track(name: "Mixed", properties: properties)
        analytics.identify(userId: "u", traits: ["inf": -Double.infinity, "name": "N"])
        analytics.flush()
        let events = try Self.received(server)
        #expect(events.count == 2)
        #expect(events.first?["properties"] == ["byInt": [:], "list": [1, nil], "ok": "yes"])
        #expect(events.last?["traits"] == ["name": "N"])
        let messages = errors.withLock { $0 }
        #expect(messages.count == 5)
        #expect(messages.contains { $0.contains("track \"Mixed\": properties.object: a NSObject has no JSON form") })
        #expect(messages.contains { $0.contains("properties.nan: nan is not a finite number") })
        #expect(messages.contains { $0.contains("properties.list.1: a NSObject has no JSON form") })
        #expect(messages.contains { $0.contains("properties.byInt: key 1 is a Int, not a String") })
        #expect(messages.contains { $0.contains("identify: traits.inf: -inf is not a finite number") })
        #expect(analytics.shutdown())
    }

    @Test func enabledFlushCompletionAndOperatingModes() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: server, errors: errors, mode: .synchronous)
        #expect(analytics.operatingMode == .synchronous)
        analytics.enabled = false
        analytics.track(name: "Ignored")
        let ranWhileDisabled = Locked(false)
        analytics.flush { ranWhileDisabled.withLock { $0 = true } }
        #expect(ranWhileDisabled.withLock { $0 })
        #expect(server.requestCount == 0)
        analytics.enabled = true
        analytics.track(name: "Counted")
        // Synchronous: the completion ran, after the upload, before flush returned.
        let uploadedAtCompletion = Locked(-1)
        analytics.flush { uploadedAtCompletion.withLock { $0 = server.requestCount } }
        #expect(uploadedAtCompletion.withLock { $0 } == 1)
        #expect(try Self.received(server).map { $0["event"] } == ["Counted"])
        #expect(analytics.shutdown())

        // Asynchronous: flush returns at once and the completion comes later, after the upload.
        let asyncServer = try LoopbackHTTPServer()
        defer { asyncServer.stop() }
        let asyncClient = Self.client(server: asyncServer, errors: errors, mode: .asynchronous)
        asyncClient.track(name: "Later")
        let done = DispatchSemaphore(value: 0)
        let uploaded = Locked(-1)
        asyncClient.flush {
            uploaded.withLock { $0 = asyncServer.requestCount }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(uploaded.withLock { $0 } == 1)
        #expect(asyncClient.shutdown())
        #expect(errors.withLock { $0 }.isEmpty)
    }

    @Test func aDisabledClientBuildsAndSendsNothing() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: server, errors: errors)
        analytics.enabled = false
        moreAnalyticsSwiftShapes(analytics, json: ["typed": true], name: nil)
        #expect(try analytics.process(payload: ["type": "track", "event": "From JSON"]) == nil)
        analytics.enabled = true
        moreAnalyticsSwiftShapes(analytics, json: ["typed": true], name: "N")
        analytics.flush()
        let events = try Self.received(server)
        #expect(events.count == 10)
        #expect(events[1]["properties"] == ["typed": true])
        #expect(events[2]["properties"] == ["name": "N"])
        #expect(events[4]["traits"]?["email"] == "a@b.c")
        #expect(events[9]["properties"] == ["url": "x://y"])
        #expect(errors.withLock { $0 }.isEmpty)
        #expect(analytics.shutdown())
    }

    @Test func pluginsFoundByTypeEnrichmentsAndVersions() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: server, errors: errors, plugins: [Diagnostics()])
        let counting = analytics.add(plugin: CountingDestination())
        // As in analytics-swift: a destination the settings do not name receives nothing until enabled.
        analytics.track(name: "Before enabling")
        analytics.manuallyEnableDestination(plugin: counting)
        analytics.add(enrichment: { event in
            guard var event = event else { return nil }
            if event.event == "Drop me" { return nil }
            event.context["enriched"] = true
            return event
        })
        #expect(analytics.find(pluginType: Serialized<CountingDestination>.self) === counting)
        #expect(analytics.find(pluginType: Diagnostics.self)?.type == .utility)
        #expect(analytics.findAll(pluginType: Diagnostics.self)?.count == 1)
        #expect(analytics.findAll(pluginType: ClosureEnrichment.self)?.count == 1)
        #expect(analytics.find(pluginType: AnalyticsSwiftStyleUnusedPlugin.self) == nil)
        #expect(analytics.findAll(pluginType: AnalyticsSwiftStyleUnusedPlugin.self) == nil)
        #expect(Diagnostics.version() == "2.1.0")
        #expect(analytics.version() == HostVersion.string)
        #expect(Analytics.version() == HostVersion.string)
        #expect(analytics.waitUntilStarted(timeout: 5))

        analytics.track(name: "Kept")
        analytics.track(name: "Drop me")
        analytics.flush()
        #expect(counting.withPlugin { $0.tracks } == 1)
        #expect(counting.withPlugin { $0.lastEvent } == "Kept")
        let events = try Self.received(server)
        #expect(events.map { $0["event"] } == ["Before enabling", "Kept"])
        #expect(events.first?["context"]?["enriched"] == nil)
        #expect(events.last?["context"]?["enriched"] == true)
        #expect(analytics.shutdown())
    }

    @Test func openURLTracksDeepLinkOpenedAndSetsTheReferrer() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let errors = Locked<[String]>([])
        let opened = URLRecorder()
        let analytics = Self.client(server: server, errors: errors, plugins: [opened])
        let url = URL(string: "myapp://orders/42?ref=mail")!
        analytics.openURL(url, options: ["source": "mail", "count": 2])
        analytics.track(name: "After")
        analytics.flush()
        let events = try Self.received(server)
        #expect(events.count == 2)
        #expect(events.first?["event"] == "Deep Link Opened")
        #expect(events.first?["properties"] == ["count": 2, "source": "mail", "url": "myapp://orders/42?ref=mail"])
        #expect(events.allSatisfy { $0["context"]?["referrer"] == ["url": "myapp://orders/42?ref=mail"] })
        #expect(opened.urls.withLock { $0 } == [url])
        #expect(opened.application.withLock { $0 } == [.openURL(url: url.absoluteString, options: ["count": 2, "source": "mail"])])
        #expect(analytics.shutdown())
    }

    @Test func memoryStorageLeavesNothingAndPurgeDeletesUnsentEvents() throws {
        // Uploads go to a port where nothing listens: events stay unsent.
        let closed = try LoopbackHTTPServer()
        closed.stop()
        let errors = Locked<[String]>([])
        let analytics = Self.client(server: closed, errors: errors)
        let directory = analytics.configuration.storageDirectory
        #expect(directory.hasPrefix("/dev/shm/") || directory.hasPrefix(NSTemporaryDirectory()))
        #expect(FileManager.default.fileExists(atPath: directory + "/queue"))
        #expect(!analytics.hasUnsentEvents)
        for i in 0..<5 { analytics.track(name: "Unsent \(i)") }
        #expect(analytics.hasUnsentEvents)
        #expect(analytics.purgeStorage() == 5)
        #expect(!analytics.hasUnsentEvents)
        analytics.track(name: "After purge")
        #expect(analytics.hasUnsentEvents)
        analytics.shutdown()
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}

extension AnalyticsSwiftStyleTests {
    @Test func theBuilderReturnsChangedCopiesBesideTheProperties() {
        let base = Configuration(writeKey: "KEY")
        let built = base.flushAt(3).trackApplicationLifecycleEvents(false).flushInterval(12)
            .operatingMode(.synchronous).storageMode(.memory(50)).autoAddSegmentDestination(false)
            .apiHost("127.0.0.1:1/v1").cdnHost("127.0.0.1:2")
        #expect(built.flushAt == 3)
        #expect(built.trackApplicationLifecycleEvents == false)
        #expect(built.flushInterval == 12)
        #expect(built.operatingMode == .synchronous)
        #expect(built.storageMode == .memory(50))
        #expect(built.autoAddSegmentDestination == false)
        #expect(built.segment.apiHost == "127.0.0.1:1/v1")
        #expect(built.settingsLocation == .cdn(host: "127.0.0.1:2"))
        // A value: the configuration it came from is unchanged.
        #expect(base.flushAt == 20 && base.trackApplicationLifecycleEvents && base.operatingMode == .asynchronous)
        var assigned = base
        assigned.flushAt = 7
        #expect(assigned.flushAt(8).flushAt == 8 && assigned.flushAt == 7)
    }

    @Test func waitUntilStartedReturnsOnceTheFirstCDNFetchIsInForce() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.json(#"{"integrations":{"Fetched":{"from":"cdn"}}}"#), path: "/v1/projects/cdn-key/settings")
        let directory = NSTemporaryDirectory() + "analytics-host-started-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let analytics = Analytics(configuration: Configuration(writeKey: "cdn-key")
            .storageMode(.diskAtURL(URL(fileURLWithPath: directory)))
            .cdnHost(server.baseURL)
            .autoAddSegmentDestination(false)
            .trackApplicationLifecycleEvents(false))
        #expect(analytics.configuration.storageDirectory == directory)
        #expect(analytics.waitUntilStarted(timeout: 30))
        #expect(analytics.settings.integrationSettings(forKey: "Fetched") == ["from": "cdn"])
        analytics.shutdown()
        // The directory stays (disk storage): the fetched settings are cached there.
        #expect(FileManager.default.fileExists(atPath: directory))

        // A CDN that cannot be reached ends start-up too (on the cached settings).
        server.stop()
        let offline = Analytics(configuration: Configuration(writeKey: "cdn-key")
            .storageMode(.diskAtURL(URL(fileURLWithPath: directory)))
            .cdnHost(server.baseURL)
            .errorHandler { _ in }
            .autoAddSegmentDestination(false)
            .trackApplicationLifecycleEvents(false))
        #expect(offline.waitUntilStarted(timeout: 30))
        #expect(offline.settings.integrationSettings(forKey: "Fetched") == ["from": "cdn"])
        offline.shutdown()
    }
}

/// A plugin nobody adds (find returns nil).
final class AnalyticsSwiftStyleUnusedPlugin: UtilityPlugin {}

/// Hears openURL both ways: analytics-swift's `OpeningURLs` and the application events.
final class URLRecorder: UtilityPlugin, OpeningURLs, ApplicationLifecycle {
    let urls = Locked<[URL]>([])
    let application = Locked<[ApplicationEvent]>([])
    func openURL(_ url: URL, options: [String: Any]) { urls.withLock { $0.append(url) } }
    func application(_ event: ApplicationEvent) {
        if case .openURL = event { application.withLock { $0.append(event) } }
    }
}
