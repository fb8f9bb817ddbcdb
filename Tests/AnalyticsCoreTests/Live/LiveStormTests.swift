import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Analytics Live II: a plugin cannot flood the pipeline (the storm bound), and the parts of the
/// references' surface that bundles written for them use: analytics.js's `page`, `reset()`
/// emptying the signals buffer, analytics-kotlin's `DataBridge`. Bundles of our own, written to
/// the shapes of Segment's (their expectations, our code).
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct LiveStormTests {
    /// The storm of the issue: a plugin that tracks inside `track()` for every event. Each input
    /// event still reaches the destination, with the events made from it up to maxEventDepth (3:
    /// 1 + 3 per input event, not hundreds of thousands); the refusal is reported once, naming the
    /// plugin and the bundle, and the run exits 3. In-process and in process mode alike.
    @Test(arguments: [false, true]) func aPluginThatTracksFromTrackIsBoundedAndReported(isolated: Bool) throws {
        let dir = makeTempDirectory("live-storm")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let setup = try LiveLimitsTests.runSetup(dir)
        let bundle = try writeBundle("""
            class Storm extends LivePlugin {
                track(event) { analytics.track("Echo of " + event.event, { from: event.event }); return event }
            }
            analytics.add(new Storm(LivePluginType.enrichment, null))
            """, name: "storm.js")
        let result = try LiveLimitsTests.run(dir, setup, bundle: bundle, extra: isolated ? ["--isolate=LivePlugins"] : [])
        #expect(result.status == 3, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("problems reported by libraries (exit status 3):"), "\(result.stdout)")
        #expect(result.stdout.contains("plugin Storm of bundle \(bundle)"), "\(result.stdout)")
        #expect(result.stdout.contains("past maxEventDepth 3"), "\(result.stdout)")
        #expect(result.stdout.contains("LivePlugins logged 1 error"), "reported once: \(result.stdout)")
        let lines = try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8).split(separator: "\n")
        let names = lines.compactMap { line -> String? in
            guard case .object(let o)? = try? JSON(parsing: String(line)) else { return nil }
            return o["event"]?.stringValue
        }
        for input in ["E1", "E2", "E3"] {
            #expect(names.filter { $0 == input }.count == 1, "the input event \(input) is delivered once: \(names)")
            #expect(names.contains("Echo of Echo of Echo of \(input)"), "depth 3 is allowed: \(names)")
            #expect(!names.contains("Echo of Echo of Echo of Echo of \(input)"), "depth 4 is refused: \(names)")
        }
        #expect(lines.count == 12, "3 input events and 3 made from each: \(names)")
        let depths = lines.compactMap { line -> Int? in
            guard case .object(let o)? = try? JSON(parsing: String(line)) else { return nil }
            return o["context"]?["__eventOrigin"]?["depth"]?.intValue
        }
        #expect(depths.sorted() == [2, 2, 2, 3, 3, 3], "events made from JavaScript's own carry their depth: \(depths)")
    }

    /// A plugin that sends without end inside one call is cut at maxEventsPerCall; the event it
    /// processes goes on; the bound is an option.
    @Test func aPluginSendingWithoutEndInOneCallIsCutAtTheBound() throws {
        let client = try LiveClient.start(options: [
            "fallbackBundle": .string(try writeBundle("""
                class Flood extends LivePlugin {
                    track(event) {
                        if (event.event !== "Go") return event
                        for (let i = 0; i < 5000; i++) analytics.track("Flood " + i)
                        return event
                    }
                }
                analytics.add(new Flood(LivePluginType.enrichment, null))
                """)),
            "maxEventsPerCall": 40,
        ])
        defer { client.analytics.shutdown() }
        client.analytics.track("Go")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        #expect(events.filter { $0.event == "Go" }.count == 1)
        #expect(events.filter { $0.event?.hasPrefix("Flood ") == true }.count == 40)
        #expect(client.observer.logLines.filter { $0.contains("sent more than 40 events in one call (maxEventsPerCall)") }.count == 1,
                "\(client.observer.logLines)")
    }

    /// A plugin that sends one event per input event (the ContextEnricher-like shape of
    /// LivePlugins.md, and the demo's "High Value Order") is not touched by the bound.
    @Test func anEventMadeFromAnInputEventIsNotBounded() throws {
        let client = try LiveClient.start(bundle: """
            class HighValue extends LivePlugin {
                track(event) { if (event.event === "Order Completed" && event.properties.total > 100) analytics.track("High Value Order", { total: event.properties.total }); return event }
            }
            analytics.add(new HighValue(LivePluginType.enrichment, null))
            """)
        defer { client.analytics.shutdown() }
        for i in 0..<300 { client.analytics.track("Order Completed", properties: ["total": .number(JSONNumber(101 + i))]) }
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        #expect(events.filter { $0.event == "High Value Order" }.count == 300)
        #expect(events.first { $0.event == "High Value Order" }?.context["__eventOrigin"]?["depth"] == nil,
                "an event made from an input event carries the references' marker as it is")
        #expect(!client.observer.logLines.contains { $0.contains("maxEvent") }, "\(client.observer.logLines)")
    }

    /// analytics.js's `page([category], [name], [properties], [options])` as edge functions call it.
    @Test(arguments: [IsolationMode.inProcess, .process]) func pageIsCalledAsAnalyticsJSReadsItsArguments(mode: IsolationMode) throws {
        let client = try LiveCompatibilityTests.start(bundle: """
            class Pages extends LivePlugin {
                track(event) {
                    if (event.event !== "Go") return event
                    analytics.page()
                    analytics.page("Home")
                    analytics.page("Docs", "Intro", { path: "/docs/intro" }, { context: { page: { referrer: "r" } } })
                    analytics.page("Pricing", { plan: "pro" })
                    return event
                }
            }
            analytics.add(new Pages(LivePluginType.enrichment, null))
            """, mode: mode)
        defer { client.analytics.shutdown() }
        client.analytics.track("Go")
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let pages = client["Amplitude"].events.filter { $0.type == .page }
        #expect(pages.count == 4, "\(pages.map(\.payload))")
        #expect(pages.contains { $0.name == nil && $0.properties == [:] })
        #expect(pages.contains { $0.name == "Home" && $0.payload["category"] == nil })
        let docs = try #require(pages.first { $0.name == "Intro" })
        #expect(docs.payload["category"] == "Docs" && docs.properties == ["path": "/docs/intro"])
        #expect(docs.context["page"]?["referrer"] == "r")
        #expect(pages.contains { $0.name == "Pricing" && $0.properties == ["plan": "pro"] })
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// analytics-kotlin-live's default bundle reads `DataBridge["mcvid"]`: the dataBridge option
    /// gives it the application's values.
    @Test func kotlinsDefaultBundleReadsTheDataBridge() throws {
        let client = try LiveClient.start(options: [
            "fallbackBundle": .string(try writeBundle("""
                class TestSuper extends LivePlugin {
                    track(event) {
                        event.context.livePluginMessage = "This came from a LivePlugin";
                        const mcvid = DataBridge["mcvid"]
                        if (mcvid) { event.context.mcvid = mcvid; }
                        return event
                    }
                }
                analytics.add(new TestSuper(LivePluginType.enrichment, null));
                """)),
            "dataBridge": ["mcvid": "70281451"],
        ])
        defer { client.analytics.shutdown() }
        client.analytics.track("testtest")
        #expect(client.analytics.flush())
        let event = try #require(client["Amplitude"].events.first { $0.event == "testtest" })
        #expect(event.context["mcvid"] == "70281451")
        #expect(event.context["livePluginMessage"] == "This came from a LivePlugin")
    }

    /// The web signals runtime empties its buffer on analytics.reset(): a generator that looks for
    /// an earlier signal finds none after a reset.
    @Test func resetEmptiesTheSignalsBuffer() throws {
        let client = try LiveCompatibilitySignalsTests.start("""
            function processSignal(signal) {
                if (signal.type !== "navigation") return
                if (signal.data.currentScreen === "Logout") { analytics.reset(); return }
                analytics.track("Seen", { screen: signal.data.currentScreen, buffered: signals.signalBuffer.length })
            }
            """)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NavigationSignal(currentScreen: "A"))
        signals.emit(NavigationSignal(currentScreen: "B"))
        signals.emit(NavigationSignal(currentScreen: "Logout"))
        signals.emit(NavigationSignal(currentScreen: "C"))
        LiveCompatibilitySignalsTests.settle(client)
        let seen = client["Amplitude"].events.filter { $0.event == "Seen" }.map { $0.properties }
        #expect(seen == [["screen": "A", "buffered": 1], ["screen": "B", "buffered": 2], ["screen": "C", "buffered": 1]], "\(seen)")
    }
}
