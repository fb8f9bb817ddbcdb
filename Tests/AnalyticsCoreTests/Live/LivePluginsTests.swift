import Foundation
import Testing
@testable import AnalyticsCore
import AnalyticsTestSupport

/// The LivePlugins library (Plugins/Live, JavaScriptCore) built from source and loaded by a real
/// client: the seed's examples verbatim, the JavaScript API, limits, and the bundle's life
/// (download, cache, fallback).
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct LivePluginsTests {
    /// The two examples of the Analytics Live README, verbatim.
    static let seedBundle = """
        class FixProductViewed extends LivePlugin {
            track(event) {
                if (event.event == "Product Viewed") {
                    // set the correct property name
                    event.properties.product_id = event.properties.product_did
                    // remove old property
                    delete event.properties.product_did
                }
                return event
            }
        }

        // Create and add the plugin
        let productViewFix = new FixProductViewed(LivePluginType.enrichment, null)
        analytics.add(productViewFix)

        // Remove advertisingId only from Amplitude events
        class RemoveAdvertisingId extends LivePlugin {
            process(event) {
                delete event.context.device.advertisingId
                return super.process(event)
            }
        }

        let deleteAdID = new RemoveAdvertisingId(LivePluginType.enrichment, "Amplitude")
        analytics.add(deleteAdID)
        """

    static let productViewed: JSONObject = [
        "type": "track", "event": "Product Viewed",
        "properties": ["product_did": "p-1", "price": 19.99],
        "context": ["device": ["advertisingId": "ad-123", "model": "x1"]],
    ]

    @Test func seedExamplesRunVerbatim() throws {
        let client = try LiveClient.start(bundle: Self.seedBundle)
        defer { client.analytics.shutdown() }
        try Self.expectSeedEffects(client)
    }

    /// Sends a Product Viewed event and another one through a client running `seedBundle`: both
    /// destinations get product_id for product_did, the other event as it was; Amplitude alone
    /// loses the advertisingId.
    static func expectSeedEffects(_ client: LiveClient) throws {
        _ = try client.analytics.process(payload: Self.productViewed)
        client.analytics.track("Order Completed", properties: ["product_did": "untouched"])
        #expect(client.analytics.flush())

        for key in ["Amplitude", "Mixpanel"] {
            let e = try #require(client[key].events.first)
            #expect(e.properties["product_id"] == "p-1", "\(key)")
            #expect(e.properties["product_did"] == nil, "\(key)")
            #expect(e.properties["price"] == 19.99)
            #expect(client[key].events.last?.properties["product_did"] == "untouched", "other events pass as they are")
        }
        let amplitude = try #require(client["Amplitude"].events.first)
        let mixpanel = try #require(client["Mixpanel"].events.first)
        #expect(amplitude.context["device"] == ["model": "x1"], "advertisingId removed for Amplitude only")
        #expect(mixpanel.context["device"] == ["advertisingId": "ad-123", "model": "x1"], "another destination keeps it")
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// Events cross into JavaScript and back exactly: strings of every kind (non-ASCII, emoji as
    /// surrogate pairs, control characters, long ones), key order, nested objects, numbers. A
    /// number JavaScript cannot hold exactly (past 2^53, `-0`) keeps its text wherever the plugin
    /// left its value alone, in an event it changed or not; one it computes is JavaScript's double.
    @Test func eventsCrossJavaScriptExactly() throws {
        let bundle = """
            class Mark extends LivePlugin {
                track(event) {
                    if (event.event === "Touch") event.properties.touched = true
                    return event
                }
            }
            analytics.add(new Mark(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let long = String(repeating: "a", count: 40) + "é😀" + String(repeating: "b", count: 3000) + "\u{7}\""
        let properties: JSONObject = [
            "text": "é😀\u{1}\"\\ line\nbreak\t/", "long": .string(long), "ключ": "значение", "k😀": 1,
            "price": 19.99, "tiny": 0.1, "small": 1e-7, "large": 1e21, "list": [1, "two", ["three": 3], nil, true],
            "empty": [:], "z": "last",
        ]
        let big = try JSON(parsing: "12345678901234567890")
        let context: JSONObject = ["device": ["model": "x1", "id": big], "negativeZero": .number(-0.0)]
        for name in ["Touch", "Pass"] {
            _ = try client.analytics.process(payload: ["type": "track", "event": .string(name), "anonymousId": "a-1",
                                                       "properties": .object(properties), "context": .object(context)])
        }
        #expect(client.analytics.flush())
        let events = client["Mixpanel"].events
        try #require(events.count == 2)
        let touched = events[0], passed = events[1]
        var expected = properties
        expected["touched"] = true
        #expect(touched.properties == expected)
        #expect(touched.properties.keys == expected.keys, "key order kept")
        #expect(touched.properties["long"]?.stringValue == long)
        #expect(touched.context["device"]?["model"] == "x1")
        #expect(touched.context["device"]?["id"]?.numberValue?.text == "12345678901234567890", "left alone: exact")
        #expect(touched.context["negativeZero"]?.numberValue?.text == "-0")
        #expect(passed.properties == properties && passed.properties.keys == properties.keys)
        #expect(passed.context["device"]?["id"]?.numberValue?.text == "12345678901234567890", "kept: exact")
        #expect(client["Mixpanel"].events.count == 2)
        #expect(passed.context["negativeZero"]?.numberValue?.text == "-0")
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// The event's context reaches JavaScript unparsed (parsed on first touch, its text put back
    /// when untouched); whatever a plugin does with it behaves as with the plain object.
    @Test func theContextIsTheObjectWhateverThePluginDoesWithIt() throws {
        let bundle = #"""
            class Context extends LivePlugin {
                track(event) {
                    const p = event.properties
                    switch (event.event) {
                    case "Read": p.model = event.context.device.model; break
                    case "Write": event.context.device.model = "y"; break
                    case "Replace": event.context = { fresh: true }; break
                    case "Delete": delete event.context; break
                    case "Keys": p.keys = Object.keys(event).join(","); p.inner = Object.keys(event.context).join(","); break
                    case "Spread": return { ...event, event: "Spread2" }
                    case "Stringify": p.text = JSON.stringify(event.context); break
                    case "Freeze": Object.freeze(event.context); p.frozen = Object.isFrozen(event.context); break
                    case "In": p.has = ("device" in event.context) && Object.hasOwn(event, "context") && !("nope" in event.context); break
                    case "Child": { const child = Object.create(event); child.context = { mine: 1 }; p.mine = child.context.mine; break }
                    case "Move": { const c = event.context; delete event.context; event.last = 1; event.context = c; break }
                    case "Same": p.same = event.context === event.context && typeof event.context === "object" && !Array.isArray(event.context); break
                    }
                    return event
                }
            }
            analytics.add(new Context(LivePluginType.enrichment, null))
            """#
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let big = try JSON(parsing: "12345678901234567890")
        let context: JSONObject = ["device": ["model": "x1", "advertisingId": "ad"], "locale": "en", "id": big,
                                   "nested": ["context": ["x": 1]]]
        let names = ["Untouched", "Read", "Write", "Replace", "Delete", "Keys", "Spread", "Stringify", "Freeze", "In", "Child", "Move", "Same"]
        // Context last, as the host writes events (then it crosses unparsed).
        for (i, name) in names.enumerated() {
            _ = try client.analytics.process(payload: ["type": "track", "event": .string(name), "anonymousId": "a-1",
                                                       "properties": ["n": 1], "messageId": .string("m-\(i)"),
                                                       "timestamp": "2026-11-24T00:00:00.000Z", "integrations": [:],
                                                       "context": .object(context)])
        }
        // Context not the last member (the app put it first): read as a whole, order kept.
        _ = try client.analytics.process(payload: ["type": "track", "context": .object(context), "event": "First", "anonymousId": "a-1",
                                                   "properties": ["n": 1]])
        #expect(client.analytics.flush())
        let events = client["Mixpanel"].events
        try #require(events.count == names.count + 1, "\(client.observer.errorMessages)")
        func event(_ name: String) -> Event { events.first { $0.event == name } ?? events[0] }
        let original = event("Untouched")
        let sent = original.context
        #expect(sent["id"]?.numberValue?.text == "12345678901234567890", "untouched: its text put back exactly")
        #expect(sent["device"] == context["device"] && sent["nested"] == context["nested"] && sent["locale"] == "en")
        #expect(event("Read").properties["model"] == "x1" && event("Read").context == sent)
        #expect(event("Write").context["device"]?["model"] == "y")
        #expect(event("Write").context["device"]?.objectValue?.keys == ["model", "advertisingId"])
        #expect(event("Replace").context == ["fresh": true])
        #expect(event("Delete").payload["context"] == nil)
        #expect(event("Keys").properties["keys"]?.stringValue == original.payload.keys.joined(separator: ","))
        #expect(event("Keys").properties["inner"]?.stringValue == sent.keys.joined(separator: ","))
        #expect(event("Spread2").context["device"] == context["device"] && event("Spread2").payload.keys == original.payload.keys)
        let text = event("Stringify").properties["text"]?.stringValue ?? ""
        #expect((try? JSON(parsing: text))?.objectValue?.keys == sent.keys, "\(text)")
        #expect(text.contains(#""device":{"model":"x1","advertisingId":"ad"}"#) && text.contains(#""nested":{"context":{"x":1}}"#), "\(text)")
        #expect(event("Freeze").properties["frozen"] == true && event("Freeze").context["device"] == context["device"])
        #expect(event("In").properties["has"] == true)
        #expect(event("Child").properties["mine"] == 1 && event("Child").context["device"] == context["device"])
        #expect(Array(event("Move").payload.keys.suffix(2)) == ["last", "context"])
        #expect(event("Move").context["id"]?.numberValue?.text == "12345678901234567890", "moved but untouched: exact")
        #expect(event("Same").properties["same"] == true)
        let first = event("First")
        #expect(first.payload.keys.first == "type" && first.payload.keys.dropFirst().first == "context", "\(first.payload.keys)")
        #expect(first.context["device"] == context["device"])
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// Every lifecycle method, each observed through an event the bundle sends back.
    @Test func everyLifecycleMethodIsCalled() throws {
        let bundle = """
            class Lifecycle extends LivePlugin {
                update(settings, type) {
                    analytics.track("lifecycle", { method: "update", initial: type === UpdateType.initial,
                                                   hasIntegrations: typeof settings.integrations === "object" })
                }
                track(event) { if (event.event !== "lifecycle") event.properties.seen = "track"; return event }
                identify(event) { event.traits.seen = "identify"; return event }
                screen(event) { event.properties.seen = "screen"; return event }
                group(event) { event.traits.seen = "group"; return event }
                alias(event) { event.previousId = "rewritten-" + event.previousId; return event }
                reset() { analytics.track("lifecycle", { method: "reset" }) }
                flush() { storage.setValue("flushes", (storage.getValue("flushes") || 0) + 1) }
            }
            class Everything extends LivePlugin {
                process(event) { event.context.everything = true; return super.process(event) }
            }
            class Executes extends LivePlugin {
                execute(event) { event.context.executed = event.type; return event }
            }
            analytics.add(new Lifecycle(LivePluginType.before, null))
            analytics.add(new Everything(LivePluginType.enrichment, "Mixpanel"))
            analytics.add(new Executes(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let a = client.analytics
        a.track("Clicked")
        a.identify(userId: "u-1", traits: ["plan": "pro"])
        a.screen("Home")
        a.group(groupId: "g-1", traits: [:])
        a.alias("u-2")
        #expect(a.flush())
        a.reset()
        #expect(a.flush())
        #expect(a.flush())

        let events = client["Amplitude"].events
        func first(_ type: EventType) throws -> Event { try #require(events.first { $0.type == type && $0.event != "lifecycle" }) }
        #expect(try first(.track).properties["seen"] == "track")
        #expect(try first(.identify).traits["seen"] == "identify")
        #expect(try first(.screen).properties["seen"] == "screen")
        #expect(try first(.group).traits["seen"] == "group")
        #expect(try first(.alias).payload["previousId"] == "rewritten-u-1")
        for type in [EventType.track, .identify, .screen, .group, .alias] {
            #expect(try first(type).context["executed"] == .string(type.rawValue), "execute sees \(type)")
            #expect(try first(type).context["everything"] == nil, "the Mixpanel-scoped plugin stays out of Amplitude")
        }
        #expect(client["Mixpanel"].events.allSatisfy { $0.context["everything"] == true })

        let lifecycle = events.filter { $0.event == "lifecycle" }.map { $0.properties }
        #expect(lifecycle.contains { $0["method"] == "update" && $0["initial"] == true && $0["hasIntegrations"] == true })
        #expect(lifecycle.contains { $0["method"] == "reset" })
        let stored = try String(contentsOfFile: client.storage + "/plugins/LivePlugins/storage.json", encoding: .utf8)
        let flushes = try #require(try JSON(parsing: stored)["flushes"]?.doubleValue)
        #expect(flushes >= 2, "flush reached the plugin")
    }

    @Test func eventsFromJavaScriptGoThroughTheWholePipeline() throws {
        let bundle = """
            class Echo extends LivePlugin {
                identify(event) {
                    analytics.track("Signed In", { plan: event.traits.plan, who: analytics.userId, anon: analytics.anonymousId })
                    analytics.screen("Welcome", "Onboarding", { step: 1 })
                    analytics.group("acme", { seats: 3 })
                    return event
                }
            }
            analytics.add(new Echo(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.identify(userId: "u-9", traits: ["plan": "pro"])
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        let signedIn = try #require(events.first { $0.event == "Signed In" })
        #expect(signedIn.properties == ["plan": "pro", "who": "u-9", "anon": .string(client.analytics.anonymousId)])
        #expect(signedIn.context["__eventOrigin"] == ["type": "js", "version": 0])
        #expect(signedIn.userId == "u-9" && signedIn.anonymousId == client.analytics.anonymousId)
        #expect(signedIn.messageId != nil && signedIn.timestamp != nil)
        #expect(signedIn.context["library"]?["name"] == "analytics-host", "the host's context is added as for any call")
        let screen = try #require(events.first { $0.type == .screen })
        #expect(screen.name == "Welcome" && screen.payload["category"] == "Onboarding" && screen.properties["step"] == 1)
        #expect(events.contains { $0.type == .group && $0.payload["groupId"] == "acme" })
        #expect(client["Mixpanel"].events.contains { $0.event == "Signed In" })
    }

    /// `new Analytics(key)`: this host's key (or none) is `analytics` itself; another key is a second
    /// client, one per key (LiveCompatibilityTests follows its events to Segment.io). Calls take
    /// analytics-swift-live's `context` argument, merged under the host's origin marker.
    @Test func newAnalyticsAndTheContextArgument() throws {
        let bundle = """
            const same = new Analytics("live-key") === analytics && new Analytics() === analytics
            const other = new Analytics("other-key")
            const message = String(other !== analytics && new Analytics("other-key") === other)
            class Probe extends LivePlugin {
                track(event) {
                    if (event.event === "Go") {
                        analytics.track("Result", { same: same, message: message },
                                        { campaign: { name: "spring" }, __eventOrigin: "spoofed" })
                        analytics.identify("u-1", { plan: "pro" }, { ip: "127.0.0.1" })
                    }
                    return event
                }
            }
            analytics.add(new Probe(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Go")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        let result = try #require(events.first { $0.event == "Result" })
        #expect(result.properties["same"] == true)
        let message = try #require(result.properties["message"]?.stringValue)
        #expect(message == "true", "another key: its own client, the same one each time")
        #expect(result.context["campaign"] == ["name": "spring"])
        #expect(result.context["__eventOrigin"] == ["type": "js", "version": 0], "the origin marker is the host's")
        let identify = try #require(events.first { $0.type == .identify && $0.userId == "u-1" })
        #expect(identify.context["ip"] == "127.0.0.1" && identify.traits["plan"] == "pro")
    }

    /// A plugin is called only for the event types it does something with (its own method, or
    /// its own execute/process for every type): the others go on unchanged without a call into
    /// JavaScript. Decided when the plugin is added (a later change to LivePlugin is not seen).
    @Test func onlyTheEventTypesAPluginHandlesEnterJavaScript() throws {
        let bundle = """
            class OnlyTrack extends LivePlugin {
                track(event) { event.properties.seen = true; return event }
            }
            class Everything extends LivePlugin {
                process(event) { event.everything = true; return event }
            }
            analytics.add(new OnlyTrack(LivePluginType.enrichment, null))
            analytics.add(new Everything(LivePluginType.enrichment, "Mixpanel"))
            const base = LivePlugin.prototype.execute
            LivePlugin.prototype.execute = function (event) {
                storage.setValue("entered", (storage.getValue("entered") || []).concat([event.type]))
                return base.call(this, event)
            }
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.identify(userId: "u-1")
        client.analytics.screen("Home")
        client.analytics.track("Bought")
        #expect(client.analytics.flush())
        let stored = try String(contentsOfFile: client.storage + "/plugins/LivePlugins/storage.json", encoding: .utf8)
        let entered = try #require(try JSON(parsing: stored)["entered"]?.arrayValue).compactMap(\.stringValue)
        // OnlyTrack: the track event only; Everything (Mixpanel's timeline): all three.
        #expect(entered.filter { $0 == "track" }.count == 2 && entered.filter { $0 != "track" }.sorted() == ["identify", "screen"],
                "\(entered)")
        let amplitude = client["Amplitude"].events
        #expect(amplitude.first { $0.type == .track }?.properties["seen"] == true)
        #expect(amplitude.count == 3 && amplitude.allSatisfy { $0.payload["everything"] == nil })
        #expect(client["Mixpanel"].events.allSatisfy { $0.payload["everything"] == true })
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    @Test func anInfiniteLoopIsStoppedAndTheHostGoesOn() throws {
        let bundle = """
            class Spinner extends LivePlugin {
                track(event) { if (event.event === "Spin") { while (true) {} } event.properties.ok = true; return event }
            }
            analytics.add(new Spinner(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(options: ["fallbackBundle": .string(try writeBundle(bundle)), "timeLimitMs": 50,
                                                    "maxConsecutiveTimeouts": 2])
        defer { client.analytics.shutdown() }
        let started = Date()
        client.analytics.track("Spin", properties: ["n": 1])
        client.analytics.track("Walk")
        #expect(client.analytics.flush())
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(client["Amplitude"].events.map(\.event) == ["Spin", "Walk"])
        #expect(client["Amplitude"].events.first?.properties == ["n": 1], "the stopped plugin's event goes on unchanged")
        #expect(client["Amplitude"].events.last?.properties["ok"] == true, "the same context runs the next event")
        #expect(client.observer.errorMessages.contains { $0.contains("Spinner") && $0.contains("timed out after 50 ms") },
                "\(client.observer.errorMessages)")

        // Two time-outs in a row (maxConsecutiveTimeouts; "Walk" succeeded in between) disable
        // the plugin: the next Spin does not run the loop at all.
        client.analytics.track("Spin", properties: ["n": 2])
        client.analytics.track("Spin", properties: ["n": 3])
        #expect(client.observer.waitFor("plugin Spinner timed out 2 times in a row"))
        client.analytics.track("Spin", properties: ["n": 4])
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.last?.properties == ["n": 4])
        #expect(client.observer.errorMessages.filter { $0.contains("timed out after") }.count == 3, "n=4 never ran the loop")
    }

    /// No `timeLimitMs` option: every call has 50 ms.
    @Test func theDefaultTimeLimitIs50Milliseconds() throws {
        let bundle = """
            class Spinner extends LivePlugin {
                track(event) { if (event.event === "Spin") { while (true) {} } event.properties.ok = true; return event }
            }
            analytics.add(new Spinner(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let started = Date()
        client.analytics.track("Spin")
        client.analytics.track("Walk")
        #expect(client.analytics.flush())
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(client.observer.errorMessages.contains { $0.contains("Spinner") && $0.contains("timed out after 50 ms (stopped)") },
                "\(client.observer.errorMessages)")
        #expect(client["Amplitude"].names == ["Spin", "Walk"])
        #expect(client["Amplitude"].events.last?.properties["ok"] == true, "the next event is fine")
    }

    /// `update`, `flush` (and `reset`) run under the same time limit as events: a loop there is
    /// stopped, reported with the plugin's name and the call, and the plugin goes on.
    @Test func aLoopInALifecycleCallIsStoppedAndReportedWithThePluginsName() throws {
        let bundle = """
            let armed = false
            class Stuck extends LivePlugin {
                update(settings, type) { if (type === UpdateType.refresh) { while (true) {} } }
                track(event) { if (event.event === "Arm") armed = true; event.properties.ok = true; return event }
                flush() { if (armed) { armed = false; while (true) {} } }
            }
            analytics.add(new Stuck(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let started = Date()
        client.analytics.update(settings: client.analytics.settings, type: .refresh)
        #expect(client.observer.contains("plugin Stuck failed in update: timed out after 50 ms (stopped)"), "\(client.observer.logLines)")
        client.analytics.track("Arm")
        #expect(client.analytics.flush())
        #expect(client.observer.contains("plugin Stuck failed in flush: timed out after 50 ms (stopped)"), "\(client.observer.logLines)")
        client.analytics.track("After")
        #expect(client.analytics.flush())
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(client["Amplitude"].names == ["Arm", "After"])
        #expect(client["Amplitude"].events.allSatisfy { $0.properties["ok"] == true }, "the same plugin runs the next events")
    }

    @Test func aBundleOverItsHeapBoundIsUnloaded() throws {
        let bundle = """
            const kept = []
            class Hoarder extends LivePlugin {
                track(event) {
                    if (event.event === "Hoard") { for (let i = 0; i < 300000; i++) kept.push({ i: i, s: "item " + i }) }
                    event.properties.hoarder = true
                    return event
                }
            }
            analytics.add(new Hoarder(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(options: ["fallbackBundle": .string(try writeBundle(bundle)),
                                                    "maxHeapBytes": 4_000_000, "heapCheckSeconds": 0,
                                                    "timeLimitMs": 10_000])  // the hoarding call must finish, even on a busy machine
        defer { client.analytics.shutdown() }
        client.analytics.track("Small")
        client.analytics.track("Hoard")
        client.analytics.track("After")
        #expect(client.analytics.flush())
        #expect(client.observer.contains("bytes of JavaScript heap, over the 4000000-byte bound"), "\(client.observer.logLines)")
        #expect(client["Amplitude"].events.map { $0.properties["hoarder"] } == [true, true, nil],
                "the call that grew the heap finishes; the bundle is unloaded after it")
    }

    @Test func aPluginThatThrowsIsReportedAndCanFailClosed() throws {
        let bundle = """
            class Thrower extends LivePlugin {
                track(event) { if (event.event === "Bad") { throw new TypeError("no thanks") } return event }
            }
            class NotAnEvent extends LivePlugin {
                screen(event) { return 42 }
            }
            class Dropper extends LivePlugin {
                track(event) { return event.event === "Drop me" ? null : event }
            }
            analytics.add(new Thrower(LivePluginType.enrichment, "Amplitude"))
            analytics.add(new Thrower(LivePluginType.enrichment, "Mixpanel"))
            analytics.add(new NotAnEvent(LivePluginType.before, null))
            analytics.add(new Dropper(LivePluginType.enrichment, null))
            """
        let path = try writeBundle(bundle)
        let client = try LiveClient.start(options: ["fallbackBundle": .string(path), "failClosed": ["Thrower"]])
        defer { client.analytics.shutdown() }
        client.analytics.track("Bad")
        client.analytics.screen("Home")
        client.analytics.track("Drop me")
        client.analytics.track("Fine")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].names == ["Home", "Fine"], "fail-closed drops the failed event; null drops it")
        let messages = client.observer.errorMessages
        #expect(messages.contains { $0.contains("Thrower") && $0.contains("TypeError: no thanks") && $0.contains("\(path):2") }, "\(messages)")
        #expect(messages.contains { $0.contains("NotAnEvent") && $0.contains("returned number, not an event object") }, "\(messages)")
    }

    /// Every failure of a JavaScript plugin (throw, non-object answer, time-out) is counted on
    /// its timeline plugin, as a C plugin's are, on the client's and on a destination's timeline.
    @Test func everyFailureOfAJavaScriptPluginIsCounted() throws {
        let bundle = """
            class Failing extends LivePlugin {
                track(event) {
                    if (event.event === "Throw") throw new Error("bad")
                    if (event.event === "Number") return 7
                    if (event.event === "Spin") while (true) {}
                    return event
                }
            }
            analytics.add(new Failing(LivePluginType.enrichment, null))
            analytics.add(new Failing(LivePluginType.enrichment, "Amplitude"))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        for name in ["Throw", "Fine", "Number", "Throw", "Spin", "Fine"] { client.analytics.track(name) }
        #expect(client.analytics.flush())
        func failing(_ timeline: Timeline) throws -> NativeTimelinePlugin {
            try #require(timeline.plugins(of: .enrichment).compactMap { $0 as? NativeTimelinePlugin }.first { $0.name == "Failing" })
        }
        #expect(try failing(client.analytics.timeline).errors == 4)
        #expect(try failing(client["Amplitude"].timeline).errors == 4)
        #expect(client.observer.errorMessages.filter { $0.contains("Failing") }.count == 8, "\(client.observer.errorMessages)")
        #expect(client["Amplitude"].names == ["Throw", "Fine", "Number", "Throw", "Spin", "Fine"], "each went on unchanged")
    }

    @Test func returningUndefinedDropsTheEventLikeNull() throws {
        let bundle = """
            class Quiet extends LivePlugin {
                track(event) { if (event.event !== "Drop me") return event }
                screen(event) { return undefined }
            }
            analytics.add(new Quiet(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Drop me")
        client.analytics.screen("Home")
        client.analytics.track("Keep")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].names == ["Keep"])
        #expect(client["Mixpanel"].names == ["Keep"])
        #expect(client.observer.errors.isEmpty, "a drop, not a failure: \(client.observer.errorMessages)")
    }

    @Test func aSyntaxErrorInTheBundleIsReportedWithFileAndLine() throws {
        let path = try writeBundle("let fine = 1;\nclass Broken extends LivePlugin {\n  track(event) { return event.properties. }\n}\n")
        let client = try LiveClient.start(options: ["fallbackBundle": .string(path)])
        defer { client.analytics.shutdown() }
        #expect(client.observer.waitFor("failed to load"))
        #expect(client.observer.contains("the fallback bundle failed to load: \(path):3: SyntaxError: Unexpected token '}'"),
                "\(client.observer.logLines)")
        client.analytics.track("Still Works")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].names == ["Still Works"])
    }

    @Test func sandboxHasNoNetworkFilesOrModules() throws {
        // import() settles in a microtask: its handlers send an event saying how, so the test
        // waits for the settlement itself, not for a state that is still "pending".
        let bundle = """
            const globals = ["fetch", "XMLHttpRequest", "require", "process", "Deno", "Bun", "setTimeout", "__live_native"]
                .filter((name) => typeof globalThis[name] !== "undefined")
            import("fs").then(() => { analytics.track("Import settled", { outcome: "loaded" }) },
                              (e) => { analytics.track("Import settled", { outcome: "refused", reason: String(e) }) })
            class Report extends LivePlugin {
                track(event) { event.properties.globals = globals; return event }
            }
            analytics.add(new Report(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Probe")
        #expect(eventually { client.analytics.flush() && client["Amplitude"].names.contains("Import settled") })
        let probe = try #require(client["Amplitude"].events.first { $0.event == "Probe" })
        #expect(probe.properties["globals"] == [], "no I/O globals and no native bridge reachable")
        let settled = try #require(client["Amplitude"].events.first { $0.event == "Import settled" })
        #expect(settled.properties["outcome"] == "refused", "\(settled.properties)")
        #expect(settled.properties["reason"]?.stringValue?.contains("Could not import the module 'fs'") == true, "\(settled.properties)")
    }

    // MARK: The JavaScript API

    @Test func analyticsTraitsAreTheUsersTraits() throws {
        let bundle = """
            class Traits extends LivePlugin { track(event) { event.properties.traits = analytics.traits; return event } }
            analytics.add(new Traits(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Anonymous")
        client.analytics.identify(userId: "u-1", traits: ["plan": "pro", "seats": 3])
        client.analytics.track("Identified")
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        #expect(events.first { $0.event == "Anonymous" }?.properties["traits"] == [:])
        #expect(events.first { $0.event == "Identified" }?.properties["traits"] == ["plan": "pro", "seats": 3])
    }

    /// `analytics.alias(newId)`: an alias event through the pipeline, from the current userId to
    /// the new one, which becomes the host's user.
    @Test func analyticsAliasSendsAnAliasFromTheCurrentUser() throws {
        let bundle = """
            class Merge extends LivePlugin { track(event) { if (event.event === "Merge") analytics.alias("u-new"); return event } }
            analytics.add(new Merge(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.identify(userId: "u-old")
        client.analytics.track("Merge")
        #expect(client.analytics.flush())
        for key in ["Amplitude", "Mixpanel"] {
            let alias = try #require(client[key].events.first { $0.type == .alias }, "\(key): \(client[key].names)")
            #expect(alias.userId == "u-new" && alias.payload["previousId"] == "u-old")
            #expect(alias.context["__eventOrigin"] == ["type": "js", "version": 0])
        }
        #expect(client.analytics.userId == "u-new")
    }

    /// `analytics.reset()` resets the host's user: the next event has a new anonymousId and no user.
    @Test func analyticsResetResetsTheHostsUser() throws {
        let bundle = """
            class Logout extends LivePlugin { track(event) { if (event.event === "Log Out") analytics.reset(); return event } }
            analytics.add(new Logout(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.identify(userId: "u-1", traits: ["plan": "pro"])
        let before = client.analytics.anonymousId
        client.analytics.track("Log Out")
        #expect(client.analytics.anonymousId != before)
        #expect(client.analytics.userId == nil && client.analytics.traits.isEmpty)
        client.analytics.track("Next")
        #expect(client.analytics.flush())
        let logout = try #require(client["Amplitude"].events.first { $0.event == "Log Out" })
        let next = try #require(client["Amplitude"].events.first { $0.event == "Next" })
        #expect(logout.userId == "u-1" && logout.anonymousId == before)
        #expect(next.userId == nil && next.anonymousId == client.analytics.anonymousId)
    }

    /// `analytics.flush()` flushes the host: the destinations are flushed without the app asking.
    @Test func analyticsFlushFlushesTheDestinations() throws {
        let bundle = """
            class Flusher extends LivePlugin { track(event) { if (event.event === "Flush Now") analytics.flush(); return event } }
            analytics.add(new Flusher(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Plain")
        #expect(client["Amplitude"].recorded.flushes == 0 && client["Mixpanel"].recorded.flushes == 0)
        client.analytics.track("Flush Now")
        #expect(eventually { client["Amplitude"].recorded.flushes >= 1 && client["Mixpanel"].recorded.flushes >= 1 })
    }

    /// A settings refresh reaches `update(settings, type)` with `UpdateType.refresh` and the new document.
    @Test func aSettingsRefreshReachesUpdateAsRefresh() throws {
        let bundle = """
            class Settle extends LivePlugin {
                update(settings, type) {
                    analytics.track("Updated", { refresh: type === UpdateType.refresh, initial: type === UpdateType.initial,
                                                 marker: settings.marker === undefined ? null : settings.marker })
                }
            }
            analytics.add(new Settle(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        #expect(client.analytics.flush())
        var json = client.analytics.settings.json
        json["marker"] = "refreshed"
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.analytics.flush())
        let updates = client["Amplitude"].events.filter { $0.event == "Updated" }.map(\.properties)
        #expect(updates.first == ["refresh": false, "initial": true, "marker": nil], "\(updates)")
        #expect(updates.filter { $0["refresh"] == true } == [["refresh": true, "initial": false, "marker": "refreshed"]], "\(updates)")
    }

    /// `LivePluginType.after` on the client's timeline runs after the fan-out to destinations: it
    /// sees the enriched event, and what it changes or drops never reaches a destination.
    @Test func anAfterPluginSeesTheEnrichedEventAndDestinationsNeverSeeItsChanges() throws {
        let bundle = """
            class After extends LivePlugin {
                track(event) {
                    console.log("after saw " + event.event + " enriched=" + event.properties.enriched)
                    event.properties.after = true
                    return event.event === "Dropped After" ? null : event
                }
            }
            class Enrich extends LivePlugin { track(event) { event.properties.enriched = true; return event } }
            analytics.add(new After(LivePluginType.after, null))  // added first: the type decides the place
            analytics.add(new Enrich(LivePluginType.enrichment, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Plain")
        client.analytics.track("Dropped After")
        #expect(client.analytics.flush())
        #expect(client.analytics.timeline.plugins(of: .after).contains { ($0 as? NativeTimelinePlugin)?.name == "After" })
        #expect(client.observer.contains("console: after saw Plain enriched=true"), "\(client.observer.logLines)")
        #expect(client.observer.contains("console: after saw Dropped After enriched=true"))
        for key in ["Amplitude", "Mixpanel"] {
            #expect(client[key].names == ["Plain", "Dropped After"], "a drop after the fan-out drops nothing")
            #expect(client[key].events.allSatisfy { $0.properties == ["enriched": true] }, "\(client[key].events.map(\.properties))")
        }
    }

    /// `LivePluginType.after` scoped to a destination runs after that destination got the event.
    @Test func aDestinationScopedAfterPluginRunsAfterItsDestination() throws {
        let bundle = """
            class After extends LivePlugin {
                track(event) { console.log("after Amplitude: " + event.event); event.properties.after = true; return event }
            }
            analytics.add(new After(LivePluginType.after, "Amplitude"))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Plain")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].timeline.plugins(of: .after).contains { ($0 as? NativeTimelinePlugin)?.name == "After" })
        #expect(client.observer.contains("console: after Amplitude: Plain"), "\(client.observer.logLines)")
        #expect(client["Amplitude"].events.map(\.properties) == [[:]], "the destination had it before the after plugin")
        #expect(client.observer.logLines.filter { $0.contains("after Amplitude") }.count == 1, "not in Mixpanel's timeline")
    }

    /// `LivePluginType.utility` sees settings, reset and flush, never an event.
    @Test func aUtilityPluginSeesSettingsResetAndFlushButNoEvents() throws {
        let bundle = """
            class Util extends LivePlugin {
                update(settings, type) { console.log("util update") }
                track(event) { console.log("util track"); event.properties.util = true; return event }
                reset() { console.log("util reset") }
                flush() { console.log("util flush") }
            }
            analytics.add(new Util(LivePluginType.utility, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Plain")
        client.analytics.reset()
        #expect(client.analytics.flush())
        #expect(client.analytics.timeline.plugins(of: .utility).contains { ($0 as? NativeTimelinePlugin)?.name == "Util" })
        for call in ["update", "reset", "flush"] {
            #expect(client.observer.contains("console: util \(call)"), "\(client.observer.logLines)")
        }
        #expect(!client.observer.contains("console: util track"))
        #expect(client["Amplitude"].events.map(\.properties) == [[:]])
    }

    /// `analytics.add` after the bundle loaded (here from a plugin's method) puts the plugin on the
    /// timeline for the events that follow.
    @Test func aPluginAddedLaterTakesEffectForTheFollowingEvents() throws {
        let bundle = """
            class Tagger extends LivePlugin { track(event) { event.properties.tagged = true; return event } }
            class Installer extends LivePlugin {
                track(event) {
                    if (event.event === "Install") analytics.add(new Tagger(LivePluginType.enrichment, null))
                    return event
                }
            }
            analytics.add(new Installer(LivePluginType.before, null))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        client.analytics.track("Early")
        client.analytics.track("Install")
        client.analytics.track("Later")
        client.analytics.track("Latest")
        #expect(client.analytics.flush())
        #expect(client.analytics.timeline.plugins(of: .enrichment).contains { ($0 as? NativeTimelinePlugin)?.name == "Tagger" })
        let events = client["Amplitude"].events
        #expect(events.map(\.event) == ["Early", "Install", "Later", "Latest"])
        #expect(events.first?.properties["tagged"] == nil)
        #expect(events.suffix(2).allSatisfy { $0.properties["tagged"] == true }, "\(events.map(\.properties))")
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    // MARK: Threads and destination timelines

    /// One bundle driven from many threads at once (callers for the client-timeline plugin, the
    /// two destinations' workers for the scoped ones): the JavaScript counts how many calls are
    /// inside and records any overlap; each event comes back with its own values.
    @Test func oneContextIsNeverEnteredByTwoThreadsAtOnce() throws {
        let bundle = """
            let inside = 0, overlaps = 0, calls = 0
            function enter() { if (inside !== 0) overlaps++; inside++; calls++ }
            function leave() { inside-- }
            function work() { let x = 0; for (let i = 0; i < 2000; i++) x += Math.sqrt(i); return x }
            class Enrich extends LivePlugin {
                track(event) {
                    enter()
                    try {
                        if (event.event === "Report") { event.properties.overlaps = overlaps; event.properties.calls = calls; return event }
                        work()
                        event.properties.client = event.properties.i
                        return event
                    } finally { leave() }
                }
            }
            class Scoped extends LivePlugin {
                track(event) {
                    enter()
                    try { work(); event.properties[this.destination] = event.properties.i; return event } finally { leave() }
                }
            }
            analytics.add(new Enrich(LivePluginType.enrichment, null))
            analytics.add(new Scoped(LivePluginType.enrichment, "Amplitude"))
            analytics.add(new Scoped(LivePluginType.enrichment, "Mixpanel"))
            """
        let client = try LiveClient.start(bundle: bundle)
        defer { client.analytics.shutdown() }
        let threads = 4, perThread = 100, total = threads * perThread
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for k in 0..<perThread { client.analytics.track("Go", properties: ["i": .number(Double(t * perThread + k))]) }
        }
        #expect(client.analytics.flush())
        client.analytics.track("Report")
        #expect(client.analytics.flush())
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
        let report = try #require(client["Amplitude"].events.last { $0.event == "Report" })
        #expect(report.properties["overlaps"] == 0)
        #expect(report.properties["calls"] == .number(Double(3 * total + 1)), "every event entered each of the three plugins")
        for key in ["Amplitude", "Mixpanel"] {
            let events = client[key].events.filter { $0.event == "Go" }
            #expect(events.count == total, "\(key)")
            #expect(Set(events.compactMap { $0.properties["i"]?.doubleValue }) == Set((0..<total).map(Double.init)), "\(key)")
            #expect(events.allSatisfy { $0.properties["client"] == $0.properties["i"] && $0.properties[key] == $0.properties["i"] },
                    "each event came back with its own values (\(key))")
        }
    }

    /// A destination-scoped plugin runs in that destination's timeline after its destination
    /// filters (include/analytics_plugin.h: the host puts them first in the before stage): an
    /// event a routing rule drops for the destination never reaches the plugin. Both ways a
    /// scoped plugin joins: the destination exists when the bundle adds it, or the settings create
    /// the destination later (the plugin waits for its key).
    @Test(arguments: [false, true]) func aDestinationScopedPluginNeverSeesWhatItsDestinationFiltersDrop(createdLater: Bool) throws {
        let bundle = """
            class Watch extends LivePlugin {
                track(event) { console.log("Amplitude's plugin saw " + event.event); event.properties.watched = true; return event }
            }
            analytics.add(new Watch(LivePluginType.before, "Amplitude"))
            """
        let rule: JSON = ["destinationName": "Amplitude",
                          "matchers": [["type": "fql", "ir": #"["=","event",{"value":"Secret"}]"#]],
                          "transformers": [[["type": "drop"]]]]
        let factory = RecordingFactory("Amplitude")
        let client = try LiveClient.start(destinations: createdLater ? ["Mixpanel"] : ["Amplitude", "Mixpanel"],
                                          settings: ["middlewareSettings": ["routingRules": [rule]]],
                                          options: ["fallbackBundle": .string(try writeBundle(bundle))],
                                          configure: { if createdLater { $0.integrationFactories = [factory] } })
        defer { client.analytics.shutdown() }
        if createdLater {
            #expect(client.analytics.find(key: "Amplitude") == nil)
            var json = client.analytics.settings.json
            json["integrations"]?["Amplitude"] = [:]
            client.analytics.update(settings: Settings(json), type: .refresh)
        }
        let amplitude = try #require(createdLater ? factory.made.withLock { $0.first } : client.destinations["Amplitude"])
        client.analytics.track("Secret")
        client.analytics.track("Public")
        #expect(client.analytics.flush())
        #expect(amplitude.names == ["Public"])
        #expect(amplitude.events.first?.properties["watched"] == true)
        #expect(client["Mixpanel"].names == ["Secret", "Public"], "the rule is Amplitude's only")
        let seen = client.observer.logLines.filter { $0.contains("Amplitude's plugin saw") }
        #expect(seen.count == 1 && seen.first?.hasSuffix("console: Amplitude's plugin saw Public") == true, "\(client.observer.logLines)")
        let before = amplitude.timeline.plugins(of: .before)
        #expect(before.first is DestinationFilterPlugin && before.last is NativeTimelinePlugin, "\(before)")
    }

    // MARK: The bundle's life

    static func versioned(_ version: Int) -> String {
        """
        class Version\(version) extends LivePlugin {
            track(event) { event.properties.bundle = \(version); if (event.event === "Echo") analytics.track("Echoed"); return event }
        }
        analytics.add(new Version\(version)(LivePluginType.enrichment, null))
        """
    }

    static func edge(_ server: LoopbackHTTPServer?, version: Int, path: String = "/bundle.js") -> JSONObject {
        ["edgeFunction": ["version": .number(Double(version)), "downloadURL": .string((server?.baseURL ?? "http://127.0.0.1:9") + path)]]
    }

    @Test func downloadFromTheServerAndAVersionBump() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: Self.versioned(1)), path: "/v1.js")
        let client = try LiveClient.start(settings: Self.edge(server, version: 1, path: "/v1.js"))
        defer { client.analytics.shutdown() }
        #expect(client.observer.waitFor("loaded bundle version 1"), "\(client.observer.logLines)")
        client.analytics.track("Echo")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.map { $0.properties["bundle"] } == [1, 1])
        let echoed = try #require(client["Amplitude"].events.first { $0.event == "Echoed" })
        #expect(echoed.context["__eventOrigin"] == ["type": "js", "version": 1])

        // A refresh naming a higher version downloads it; the same version does not.
        server.enqueue(.status(200, body: Self.versioned(2)), path: "/v2.js")
        var json = client.analytics.settings.json
        json["edgeFunction"] = Self.edge(server, version: 2, path: "/v2.js")["edgeFunction"]
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.observer.waitFor("loaded bundle version 2"))
        client.analytics.update(settings: Settings(json), type: .refresh)
        // A lower version (1, below the active 2) neither downloads nor replaces.
        server.enqueue(.status(200, body: Self.versioned(1)), path: "/v1-again.js")
        json["edgeFunction"] = Self.edge(server, version: 1, path: "/v1-again.js")["edgeFunction"]
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.analytics.flush(), "the instance's flush comes after its update: the refresh was handled")
        client.analytics.track("After")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.last?.properties["bundle"] == 2)
        #expect(server.requests.map(\.path) == ["/v1.js", "/v2.js"])
        #expect(client.observer.logLines.filter { $0.contains("loaded bundle version") }.count == 2, "\(client.observer.logLines)")
        #expect(try String(contentsOfFile: client.storage + "/plugins/LivePlugins/bundle.version", encoding: .utf8) == "2\n")
    }

    /// After a refused replacement: events still run through bundle 1, which stays the cached
    /// one, and no half-written download is left behind.
    private func expectBundleOneStaysActive(_ client: LiveClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        client.analytics.track("Still One")
        #expect(client.analytics.flush(), sourceLocation: sourceLocation)
        #expect(client["Amplitude"].events.last?.properties["bundle"] == 1, sourceLocation: sourceLocation)
        #expect(try String(contentsOfFile: client.storage + "/plugins/LivePlugins/bundle.version", encoding: .utf8) == "1\n",
                sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: client.storage + "/plugins/LivePlugins/bundle.js.download"),
                sourceLocation: sourceLocation)
    }

    @Test func aFailedOrBrokenDownloadKeepsTheLastGoodBundle() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: Self.versioned(1)), path: "/v1.js")
        let client = try LiveClient.start(settings: Self.edge(server, version: 1, path: "/v1.js"))
        defer { client.analytics.shutdown() }
        #expect(client.observer.waitFor("loaded bundle version 1"))
        var json = client.analytics.settings.json

        server.enqueue(.status(404, body: "gone"), path: "/v2.js")
        json["edgeFunction"] = Self.edge(server, version: 2, path: "/v2.js")["edgeFunction"]
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.observer.waitFor("HTTP status 404"))

        server.enqueue(.status(200, body: "class Oops extends LivePlugin {\n  track(e) { return e }\n}\nundefinedFunction()\n"), path: "/v3.js")
        json["edgeFunction"] = Self.edge(server, version: 3, path: "/v3.js")["edgeFunction"]
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.observer.waitFor("bundle version 3 from"))
        #expect(client.observer.contains("/v3.js:4: ReferenceError"), "\(client.observer.logLines)")

        try expectBundleOneStaysActive(client)
    }

    @Test func aSyntaxErrorInADownloadedReplacementKeepsThePreviousBundle() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: Self.versioned(1)), path: "/v1.js")
        let client = try LiveClient.start(settings: Self.edge(server, version: 1, path: "/v1.js"))
        defer { client.analytics.shutdown() }
        #expect(client.observer.waitFor("loaded bundle version 1"))

        let broken = "class Two extends LivePlugin {\n  track(event) { return event.properties. }\n}\nanalytics.add(new Two(LivePluginType.enrichment, null))\n"
        server.enqueue(.status(200, body: broken), path: "/v2.js")
        let url = server.baseURL + "/v2.js"
        var json = client.analytics.settings.json
        json["edgeFunction"] = Self.edge(server, version: 2, path: "/v2.js")["edgeFunction"]
        client.analytics.update(settings: Settings(json), type: .refresh)
        #expect(client.observer.waitFor("bundle version 2 from"))
        #expect(client.observer.contains("bundle version 2 from \(url) failed to load: \(url):2: SyntaxError: Unexpected token '}'"),
                "\(client.observer.logLines)")
        #expect(client.observer.contains("keeping the active bundle"))

        try expectBundleOneStaysActive(client)
    }

    @Test func theCachedBundleSurvivesARestartWithoutDownloadingAgain() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: Self.versioned(4)), path: "/v4.js")
        let storage = makeTempDirectory("live-cache")
        let first = try LiveClient.start(storage: storage, settings: Self.edge(server, version: 4, path: "/v4.js"))
        #expect(first.observer.waitFor("loaded bundle version 4"))
        #expect(first.analytics.shutdown())

        server.stop()  // nothing to download from now on
        let second = try LiveClient.start(storage: storage, settings: Self.edge(server, version: 4, path: "/v4.js"))
        defer { second.analytics.shutdown() }
        #expect(second.observer.contains("loaded the cached bundle"))
        second.analytics.track("Cached")
        #expect(second.analytics.flush())
        #expect(second["Amplitude"].events.first?.properties["bundle"] == 4)
        #expect(server.requestCount == 1)
    }

    @Test func anOfflineFirstStartRunsTheFallback() throws {
        let server = try LoopbackHTTPServer()
        let offline = Self.edge(server, version: 7)
        server.stop()  // connection refused from now on
        let fallback = try writeBundle(Self.versioned(0))
        let client = try LiveClient.start(settings: offline, options: ["fallbackBundle": .string(fallback)])
        defer { client.analytics.shutdown() }
        #expect(client.observer.waitFor("download of bundle version 7"))
        client.analytics.track("Offline")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.first?.properties["bundle"] == 0)
        #expect(!FileManager.default.fileExists(atPath: client.storage + "/plugins/LivePlugins/bundle.js"))
    }

    @Test func anEmptyDownloadURLDisablesTheBundle() throws {
        let fallback = try writeBundle(Self.versioned(0))
        let client = try LiveClient.start(settings: ["edgeFunction": ["version": 1, "downloadURL": ""]],
                                          options: ["fallbackBundle": .string(fallback)])
        defer { client.analytics.shutdown() }
        client.analytics.track("Plain")
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.first?.properties["bundle"] == nil)
        #expect(client.observer.contains("LivePlugins disabled"))
    }

    @Test func storagePersistsAcrossRestarts() throws {
        let bundle = """
            const runs = (storage.getValue("runs") || 0) + 1
            storage.setValue("runs", runs)
            storage.setValue("gone", { a: [1, 2] })
            storage.removeValue("gone")
            class Runs extends LivePlugin { track(event) { event.properties.runs = runs; event.properties.gone = storage.getValue("gone") === undefined; return event } }
            analytics.add(new Runs(LivePluginType.enrichment, null))
            """
        let path = try writeBundle(bundle)
        let storage = makeTempDirectory("live-storage")
        for run in 1...2 {
            let client = try LiveClient.start(storage: storage, options: ["fallbackBundle": .string(path)])
            client.analytics.track("Run")
            #expect(client.analytics.flush())
            #expect(client["Amplitude"].events.first?.properties["runs"] == .number(Double(run)))
            #expect(client["Amplitude"].events.first?.properties["gone"] == true)
            #expect(client.analytics.shutdown())
        }
    }

    // MARK: The command

    /// `make run`'s demo with LivePlugins: examples/live.js as the fallback bundle.
    @Test func theDemoRunsExamplesLiveJS() throws {
        let dir = makeTempDirectory("cli-live")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FileManager.default.copyItem(atPath: try LiveLibrary.directory() + "/libliveplugins.so", toPath: plugins + "/libliveplugins.so")
        var settings = try String(contentsOfFile: FixtureBuilder.root + "/examples/settings.json", encoding: .utf8)
        settings = settings.replacingOccurrences(of: "../build/demo/file-destination.ndjson", with: dir + "/file.ndjson")
            .replacingOccurrences(of: "../build/demo/metrics.json", with: dir + "/metrics.json")
        try settings.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--device", "--settings", dir + "/settings.json", "--plugins", plugins,
                                         "--storage", dir + "/storage", "--input", FixtureBuilder.root + "/examples/events.ndjson",
                                         "--live-plugins", FixtureBuilder.root + "/examples/live.js", "--drain-timeout", "0"], in: dir)
        // 4: the demo settings point Segment.io at a closed port (`make run` passes --api-host to a local receiver).
        #expect(result.status == 4, "\(result.stderr)")
        #expect(result.stderr.contains("LivePlugins: console: examples/live.js loaded"), "\(result.stderr)")
        #expect(result.stderr.contains(#"[analytics] track "Product Viewed""#))
        #expect(result.stderr.contains(#""product_id":"p-1""#) && !result.stderr.contains("product_did"), "FixProductViewed ran")
        #expect(result.stderr.contains(#"[analytics] track "High Value Order""#), "an event made in JavaScript reached Console")
        let file = try String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8)
        #expect(file.contains(#""__eventOrigin":{"type":"js","version":0}"#))
        #expect(result.stderr.contains(#""seen_by":"live.js""#), "the Console-scoped plugin ran in Console")
        #expect(!file.contains("seen_by"), "and stays out of File")

        let missing = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", plugins,
                                          "--live-plugins", dir + "/nope.js"], stdin: "", in: dir)
        #expect(missing.status == 2 && missing.stderr.contains("nope.js"))
    }
}
