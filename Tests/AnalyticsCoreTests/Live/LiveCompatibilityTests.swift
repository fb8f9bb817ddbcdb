import AnalyticsTestSupport
import Foundation
import Testing
import LoopbackHTTP
@testable import AnalyticsCore

/// Bundles of our own that use Analytics Live's JavaScript surface the way the bundles and tests
/// of analytics-swift-live, analytics-kotlin-live and analytics-next's signals runtime use it,
/// asserted against the outcomes those references' tests expect. Where this host deliberately
/// differs, the test says so and docs/liveplugins.md lists it.
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct LiveCompatibilityTests {
    /// A plugin subclass as the references' test bundles write one: `update(settings, type)`
    /// compared with `== true` (never true there: the type is "Initial"), an `execute` that calls
    /// `super.execute`, a track that marks the context, a screen that tracks from inside the plugin;
    /// then a second client for another write key, assigned to an undeclared global as the
    /// references' bundle does, and the plugin's numeric type logged.
    static let secondClientBundle = """
        console.log("compat: starting");
        class Marker extends LivePlugin {
            constructor(type, destination) { super(type, destination); }
            update(settings, initialUpdate) {
                if (initialUpdate == true) { console.log("compat: never, the type is a string"); }
                console.log("compat: update " + initialUpdate + " " + (initialUpdate === UpdateType.initial));
            }
            execute(event) { return super.execute(event); }
            track(event) { event.context.livePluginMessage = "marked by compat"; return event; }
            screen(event) { analytics.track("screenSeen", null); return event; }
        }
        let other = new Analytics("second_write_key");
        _ = other.track("signedUp", { plan: "Pro Annual", accountType: "Facebook" });
        _ = other.track("checkedOut", { amount: "$1337.00" });
        other.flush();
        let marker = new Marker(LivePluginType.enrichment, null);
        console.log("compat: type " + marker.type);
        const added = analytics.add(marker);
        console.log("compat: added " + added);
        """

    /// The host's uploads are off (no Segment.io destination of its own): what the server gets is the
    /// second client's.
    static func start(bundle: String, server: LoopbackHTTPServer? = nil, mode: IsolationMode = .inProcess,
                      settings: JSONObject = [:], configure: (inout Configuration) -> Void = { _ in }) throws -> LiveClient {
        try LiveClient.start(settings: settings, options: ["fallbackBundle": .string(try writeBundle(bundle))]) {
            if let server { $0.segment.apiHost = server.baseURL + "/v1" }
            $0.flushInterval = 3600
            if mode == .process {
                $0.isolation.byKey["LivePlugins"] = .process
                $0.isolation.scanCacheFile = ""
                if IsolatedCgroup.unavailableReason != nil { $0.isolation.memoryLimitBytes = 0 }
            }
            configure(&$0)
        }
    }

    // MARK: LivePlugin and analytics (analytics-swift-live's LivePluginTests)

    /// testEdgeFnLoad and testEventMorphing: a track is marked by the plugin; a screen reaches the
    /// destinations with the track its plugin sent. `update` gets "Initial"; the type is 1; add()
    /// answers true.
    @Test(arguments: [IsolationMode.inProcess, .process]) func pluginMarksTracksAndTracksFromScreen(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let client = try Self.start(bundle: Self.secondClientBundle, server: server, mode: mode)
        defer { client.analytics.shutdown() }
        client.analytics.track("blah")
        client.analytics.screen("Home")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        #expect(events.first { $0.event == "blah" }?.context["livePluginMessage"] == "marked by compat")
        #expect(events.contains { $0.type == .screen && $0.name == "Home" })
        // The references' test expects the plugin's track before the screen (their call is
        // synchronous); here it runs after the call returns, so it arrives second (documented).
        #expect(events.contains { $0.event == "screenSeen" && $0.context["livePluginMessage"] == "marked by compat" })
        #expect(client.observer.contains("compat: type 1"))
        #expect(client.observer.contains("compat: added true"))
        #expect(client.observer.contains("compat: update Initial true"))
        #expect(!client.observer.contains("compat: never"))
        #expect(!events.contains { $0.event == "signedUp" || $0.event == "checkedOut" }, "the second client shares no destination")
    }

    /// testbundle.js's `new Analytics("another_write_key")`: its events go to Segment.io under that
    /// key, through a queue of its own, and survive the bundle; `flush()` sends them.
    @Test(arguments: [IsolationMode.inProcess, .process]) func aSecondClientSendsUnderItsOwnWriteKey(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let client = try Self.start(bundle: Self.secondClientBundle, server: server, mode: mode)
        #expect(server.waitForRequests(1, timeout: 20), "the bundle's flush() sends the second client's events")
        client.analytics.shutdown()
        let batches = try server.requests.map(ReceivedBatch.init)
        #expect(batches.allSatisfy { $0.writeKey == "second_write_key" })
        #expect(server.requests.allSatisfy { $0.header("Authorization") == "Basic " + Data("second_write_key:".utf8).base64EncodedString() })
        let events = server.requests.compactMap { parseObject($0.body)?["batch"]?.arrayValue }.flatMap { $0 }
        #expect(events.compactMap { $0["event"]?.stringValue } == ["signedUp", "checkedOut"])
        #expect(events.first?["properties"] == ["plan": "Pro Annual", "accountType": "Facebook"])
        #expect(events.first?["context"]?["__eventOrigin"]?["type"] == "js")
        #expect(events.first?["context"]?["livePluginMessage"] == nil, "the host's plugins are not the second client's")
        let queues = try FileManager.default.contentsOfDirectory(atPath: client.storage + "/clients")
        #expect(queues.count == 1 && queues[0].hasPrefix("second_write_key-"), "its own durable queue: \(queues)")
    }

    /// What a second client accepted while Segment.io could not be reached is on disk: the next
    /// start, when the bundle opens that write key again, delivers it with the new events.
    @Test func aSecondClientsQueueSurvivesARestart() throws {
        let storage = makeTempDirectory("live-second-restart")
        let bundle = try writeBundle(Self.secondClientBundle)
        func run(apiHost: String) throws -> LiveClient {
            try LiveClient.start(storage: storage, options: ["fallbackBundle": .string(bundle)]) {
                $0.segment.apiHost = apiHost
                $0.flushInterval = 3600
                $0.flushTimeout = 1
            }
        }
        let offline = try run(apiHost: "http://127.0.0.1:\(try refusedPort())/v1")
        #expect(offline.observer.waitFor("compat: added true"))
        offline.analytics.shutdown()

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let online = try run(apiHost: server.baseURL + "/v1")
        #expect(eventually(timeout: 20) {
            server.requests.compactMap { parseObject($0.body)?["batch"]?.arrayValue }.flatMap { $0 }.count >= 4
        }, "the first run's two events and the second run's two")
        online.analytics.shutdown()
        let events = server.requests.compactMap { parseObject($0.body)?["batch"]?.arrayValue }.flatMap { $0 }
        #expect(events.filter { $0["event"] == "signedUp" }.count == 2 && events.filter { $0["event"] == "checkedOut" }.count == 2)
        #expect(Set(events.compactMap { $0["messageId"]?.stringValue }).count == 4, "four distinct events, none twice")
        #expect(try server.requests.map(ReceivedBatch.init).allSatisfy { $0.writeKey == "second_write_key" })
    }

    /// A second client's user is its own; identify on it is not the host's.
    @Test func aSecondClientHasItsOwnUser() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let bundle = """
            const other = new Analytics("second_write_key")
            other.identify("other-user", { plan: "b" })
            class Probe extends LivePlugin {
                track(event) {
                    if (event.event === "Ask") analytics.track("Answer", { host: analytics.userId, other: other.userId,
                                                                           otherPlan: other.traits.plan,
                                                                           distinct: other.anonymousId !== analytics.anonymousId })
                    return event
                }
            }
            console.log("compat: add on the second client " + other.add(new Probe(LivePluginType.enrichment, null)))
            analytics.add(new Probe(LivePluginType.enrichment, null))
            """
        let client = try Self.start(bundle: bundle, server: server)
        defer { client.analytics.shutdown() }
        client.analytics.track("Ask")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let answer = try #require(client["Amplitude"].events.first { $0.event == "Answer" })
        #expect(answer.properties["host"] == .null && answer.properties["other"] == "other-user")
        #expect(answer.properties["otherPlan"] == "b" && answer.properties["distinct"] == true)
        #expect(client.analytics.userId == nil)
        // analytics-kotlin-live: only the injected client adds plugins.
        #expect(client.observer.contains("compat: add on the second client false"))
        #expect(client.observer.contains("a second client (new Analytics(writeKey)) runs no plugins"))
    }

    /// addliveplugin.js: the same plugin on the main timeline and scoped to "Segment.io", whose
    /// screen() tracks (the re-entry that once hung the host): add() answers true twice, the screen
    /// and both plugins' trackScreen reach Segment.io, marked by the Segment.io-scoped plugin.
    @Test(arguments: [IsolationMode.inProcess, .process]) func addlivepluginOnTheMainTimelineAndSegmentIO(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let bundle = """
            class Sample extends LivePlugin {
                constructor(type, destination) { super(type, destination); }
                update(settings, initialUpdate) { if (initialUpdate == true) { console.log(settings) } }
                execute(event) { return super.execute(event); }
                track(event) { event.context.livePluginMessage = "from " + (this.destination || "main"); return event; }
                screen(event) { analytics.track("trackScreen", null); return event; }
            };
            let fn = new Sample(LivePluginType.enrichment, null);
            const first = analytics.add(fn);
            let fn2 = new Sample(LivePluginType.enrichment, "Segment.io");
            console.log("compat: added " + first + " " + analytics.add(fn2));
            """
        let client = try Self.start(bundle: bundle, server: server, mode: mode) { $0.autoAddSegmentDestination = true }
        client.analytics.screen("Checkout")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        client.analytics.shutdown()
        #expect(client.observer.contains("compat: added true true"))
        let events = server.requests.compactMap { parseObject($0.body)?["batch"]?.arrayValue }.flatMap { $0 }
        #expect(events.contains { $0["type"] == "screen" && $0["name"] == "Checkout" })
        let tracks = events.filter { $0["event"] == "trackScreen" }
        #expect(tracks.count == 2 && tracks.allSatisfy { $0["context"]?["livePluginMessage"] == "from Segment.io" }, "\(tracks)")
        #expect(client["Amplitude"].events.filter { $0.event == "trackScreen" }.allSatisfy { $0.context["livePluginMessage"] == "from main" })
    }

    // MARK: The JavaScript surface

    /// LivePluginType is analytics-swift's PluginType numbers; add() answers true or false; a
    /// type that is not a LivePluginType and a destination the settings do not name are reported.
    @Test func pluginTypesAndWhatAddAnswers() throws {
        let bundle = """
            class P extends LivePlugin {}
            const results = {
                types: [LivePluginType.before, LivePluginType.enrichment, LivePluginType.after, LivePluginType.utility],
                before: analytics.add(new P(LivePluginType.before, null)),
                after: analytics.add(new P(LivePluginType.after, "Amplitude")),
                utility: analytics.add(new P(LivePluginType.utility, null)),
                stringType: analytics.add(new P("enrichment", null)),
                destinationStage: analytics.add(new P(2, null)),
                notAPlugin: analytics.add(null),
                unknownDestination: analytics.add(new P(LivePluginType.enrichment, "Nope")),
            }
            analytics.track("Results", results)
            """
        let client = try Self.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        #expect(client.analytics.flush())
        let results = try #require(client["Amplitude"].events.first { $0.event == "Results" }).properties
        #expect(results["types"] == [0, 1, 3, 4])
        #expect(results["before"] == true && results["after"] == true && results["utility"] == true)
        #expect(results["stringType"] == false && results["destinationStage"] == false && results["notAPlugin"] == false)
        #expect(client.observer.contains("plugin P has type \"enrichment\", not a LivePluginType: not added"), "\(client.observer.logLines)")
        #expect(client.observer.contains("plugin P has type 2, not a LivePluginType: not added"))
        // Here the plugin waits for that destination (the settings may create it); the references
        // answer false and drop it. Either way it is said.
        #expect(results["unknownDestination"] == true)
        #expect(client.observer.contains("names destination \"Nope\", which the settings do not name"))
    }

    /// update(settings, type) gets "Initial", then "Refresh" on a settings refresh (UpdateType's values).
    @Test func updateReceivesUpdateTypeValues() throws {
        let bundle = """
            class U extends LivePlugin {
                update(settings, type) { analytics.track("Updated", { type: type, refresh: type === UpdateType.refresh }) }
            }
            analytics.add(new U(LivePluginType.before, null))
            """
        let client = try Self.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        #expect(client.analytics.flush())
        client.analytics.update(settings: client.analytics.settings, type: .refresh)
        #expect(client.analytics.flush())
        let updates = client["Amplitude"].events.filter { $0.event == "Updated" }.map(\.properties)
        #expect(updates == [["type": "Initial", "refresh": false], ["type": "Refresh", "refresh": true]], "\(updates)")
    }

    /// identify("x") then userId reads "x" in the same call, traits are merged, a later alias uses
    /// the new id as previousId, and reset clears them; calls without their string do nothing
    /// (track(undefined), screen(undefined)) and say so, and the bundle goes on.
    @Test func identityWithinOneCallAndCallsWithoutTheirString() throws {
        let bundle = """
            class Id extends LivePlugin {
                track(event) {
                    if (event.event !== "Go") return event
                    analytics.identify("x", { plan: "pro" })
                    const seen = analytics.userId, plan = analytics.traits.plan
                    analytics.alias("y")
                    const afterAlias = analytics.userId
                    analytics.track(undefined)
                    analytics.screen(undefined)
                    analytics.identify(undefined)
                    analytics.group(null)
                    analytics.track("Seen", { seen: seen, plan: plan, afterAlias: afterAlias })
                    return event
                }
            }
            analytics.add(new Id(LivePluginType.before, null))
            """
        let client = try Self.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Go")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        let seen = try #require(events.first { $0.event == "Seen" })
        #expect(seen.properties == ["seen": "x", "plan": "pro", "afterAlias": "y"])
        let alias = try #require(events.first { $0.type == .alias })
        #expect(alias.payload["previousId"] == "x" && alias.userId == "y")
        #expect(client.analytics.userId == "y")
        #expect(events.count == 4, "Go, identify, alias, Seen: nothing from the calls without their string: \(events.map(\.type))")
        #expect(client.observer.contains("track: the event name must be a string, found undefined: nothing sent"))
        #expect(client.observer.contains("screen: the title must be a string, found undefined: nothing sent"))
        #expect(client.observer.contains("group: the groupId must be a string, found null: nothing sent"))
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    // MARK: Errors in bundles (analytics-swift-live's badtest.js)

    /// A bundle that stops at an error keeps what it did before: its plugin runs and its event is
    /// sent; the error names the bundle's line.
    @Test func aLoadErrorKeepsWhatTheBundleDidAndNamesTheLine() throws {
        let bundle = """
            console.log("This will work")
            class Keep extends LivePlugin { track(event) { event.properties.kept = true; return event } }
            analytics.add(new Keep(LivePluginType.enrichment, null))
            analytics.track("Before the error")
            thisFunctionDoesNotExist()
            console.log("This won't run")
            """
        let path = try writeBundle(bundle)
        let client = try LiveClient.start(options: ["fallbackBundle": .string(path)])
        defer { client.analytics.shutdown() }
        client.analytics.track("Later")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        #expect(events.first { $0.event == "Before the error" }?.properties["kept"] == true)
        #expect(events.first { $0.event == "Later" }?.properties["kept"] == true)
        #expect(client.observer.contains("\(path):5: ReferenceError: Can't find variable: thisFunctionDoesNotExist"), "\(client.observer.logLines)")
        #expect(client.observer.contains("what it did before the error stays"))
        #expect(!client.observer.contains("This won't run"))
    }

    /// An error raised inside the runtime on the bundle's behalf is located at the bundle's line
    /// that made the call, not in the runtime's own file.
    @Test func runtimeErrorsPointAtTheBundlesLine() throws {
        let bundle = """
            class P extends LivePlugin {
                track(event) {
                    storage.setValue("f", () => 1)
                    return event
                }
            }
            analytics.add(new P(LivePluginType.enrichment, null))
            """
        let path = try writeBundle(bundle)
        let client = try LiveClient.start(options: ["fallbackBundle": .string(path)])
        defer { client.analytics.shutdown() }
        client.analytics.track("Go")
        #expect(client.analytics.flush())
        let message = client.observer.errorMessages.first { $0.contains("storage.setValue") } ?? ""
        #expect(message.contains("\(path):3: TypeError: storage.setValue: the value has no JSON form"), "\(client.observer.errorMessages)")
        #expect(!message.contains("liveplugins.js"))
    }
}
