import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Signals through LivePlugins (Plugins/Live + runtime/signals.js + live_signals.c, JavaScriptCore)
/// in a real client: the seed's event generators verbatim, the buffer, replay, loop prevention.
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct SignalsJavaScriptTests {
    /// The Signals examples of the Analytics Live README, verbatim.
    static let seedGenerators = SeedSignalGenerators.source

    private func start(_ bundle: String, settings: JSONObject = [:], signals: (inout SignalsConfiguration) -> Void = { _ in }) throws -> LiveClient {
        try LiveClient.start(destinations: ["Amplitude"], settings: settings,
                             options: ["fallbackBundle": .string(try writeBundle(bundle))]) {
            var c = quietSignals()
            signals(&c)
            $0.signals = c
        }
    }

    /// Waits until every signal emitted so far went through processSignal and what it sent was delivered.
    private func settle(_ client: LiveClient) {
        #expect(client.analytics.signals?.flush(timeout: 10) == true)
        #expect(client.analytics.flush())
    }

    @Test func seedGeneratorsTurnSignalsIntoEvents() throws {
        let client = try start(Self.seedGenerators)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NavigationSignal(action: .entering, screen: "ProductDetail"))
        signals.emit(NetworkSignal(action: .response, url: "https://shop.example/api/product/42", statusCode: 200,
                                   data: ["content": ["id": "42", "title": "Mug", "price": 19.99]]))
        signals.emit(NetworkSignal(action: .response, url: "https://shop.example/api/cart", statusCode: 200, data: ["content": [:]]))
        // The seed's generators read the earlier interaction shape (data.title): an input in that
        // shape keeps it (a typed InteractionSignal has today's shape, data.target.title).
        _ = try signals.emit(json: ["type": "interaction", "data": ["component": "button", "title": "Add To Cart"]])
        settle(client)

        let events = client["Amplitude"].events
        #expect(events.map { $0.event ?? $0.name ?? "" } == ["Screen Viewed", "Add To Cart"])
        #expect(events.first?.properties["screenName"] == "ProductDetail")
        let cart = try #require(events.last)
        #expect(cart.properties == ["price": 19.99, "currency": "USD", "productId": "42", "productName": "Mug"])
        // Made from signals: marked, and not turned back into signals.
        for e in events { #expect(e.context["__eventOrigin"]?["type"]?.stringValue == SignalsOrigin.type) }
        #expect(signals.stats.loopGuarded == 2 && signals.stats.instrumented == 0)
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// The README's generators against what an app emits today (typed signals, 3.x shapes:
    /// `data.target.title`, `data.body`): they read the earlier names through aliases, and what a
    /// bundle stringifies is still the 3.x shape.
    @Test func seedGeneratorsReadTypedSignalsOfTodaysShape() throws {
        let bundle = Self.seedGenerators + """

            var shapes = []
            const seedProcess = processSignal
            processSignal = function (signal) {
                if (signal.type === SignalType.Interaction) shapes.push(JSON.stringify(signal.data))
                seedProcess(signal)
                if (signal.type === SignalType.Interaction) analytics.track("shape", { json: shapes[shapes.length - 1] })
            }
            """
        let client = try start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NetworkSignal(action: .response, url: "https://shop.example/api/product/7",
                                   body: ["content": ["id": "7", "title": "Tea", "price": 4.5]], status: 200))
        signals.emit(InteractionSignal(component: "button", title: "Add To Cart"))
        settle(client)

        let events = client["Amplitude"].events
        #expect(events.map { $0.event ?? "" } == ["Add To Cart", "shape"])
        #expect(events.first?.properties == ["price": 4.5, "currency": "USD", "productId": "7", "productName": "Tea"])
        #expect(events.last?.properties["json"] == #"{"target":{"component":"button","title":"Add To Cart"}}"#)
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    @Test func theBufferIsBoundedNewestFirstAndSearchable() throws {
        let bundle = """
            function processSignal(signal, runtime) {
                if (runtime.signals !== signals || runtime.analytics !== analytics) throw new Error("second argument")
                if (signal.data.last !== true) return
                console.log("buffer " + signals.signalBuffer.map((s) => s.index).join(","))
                const older = signals.find(signal, SignalType.UserDefined, (s) => s.data.n % 2 === 0)
                console.log("find " + older.index + " " + older.data.n)
                console.log("none " + String(signals.find(signal, SignalType.Network)))
                let applied = null
                const found = signals.findAndApply(null, null, (s) => s.data.n === 9, (s) => { applied = s.index })
                console.log("applied " + applied + " " + found.index)
                const nav = new NavigationSignal(NavigationAction.Modal, "Sheet")
                signals.add(nav)
                console.log("added " + nav.index + " " + nav.type + " " + nav.data.action + " " + signals.signalBuffer.length + " " + signals.signalBuffer[0].data.screen)
                const tap = new InteractionSignal("button", "Buy", {sku: "A"})
                console.log("interaction " + JSON.stringify(tap.data) + " " + (tap instanceof RawSignal))
            }
            """
        let client = try start(bundle, settings: ["signals": ["maximumBufferSize": 5]])
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        for n in 0..<11 { signals.emit(userDefined: ["n": .number(Double(n))]) }
        signals.emit(userDefined: ["n": 11, "last": true])
        settle(client)
        let lines = client.observer.logLines
        #expect(lines.contains { $0.hasSuffix("console: buffer 11,10,9,8,7") }, "\(lines)")
        #expect(lines.contains { $0.hasSuffix("console: find 10 10") })
        #expect(lines.contains { $0.hasSuffix("console: none undefined") })
        #expect(lines.contains { $0.hasSuffix("console: applied 9 9") })
        #expect(lines.contains { $0.hasSuffix("console: added 12 navigation modal 5 Sheet") })
        #expect(lines.contains { $0.hasSuffix(#"console: interaction {"component":"button","info":"Buy","title":"Buy","data":{"sku":"A"}} true"#) })
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    @Test func signalsEmittedBeforeTheBundleLoadsAreReplayedInOrder() throws {
        let server = try LoopbackHTTPServer()
        server.enqueue(.respond(status: 200, headers: [("Content-Type", "application/javascript")], body: Array("""
            function processSignal(signal) { analytics.track("Seen " + signal.data.n) }
            """.utf8)), path: "/bundle.js")
        // No fallback and no edgeFunction yet: there is no bundle, so signals are held.
        let client = try LiveClient.start(destinations: ["Amplitude"]) { $0.signals = quietSignals() }
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        for n in 0..<5 { signals.emit(userDefined: ["n": .number(Double(n))]) }
        #expect(signals.flush(timeout: 5))
        #expect(client.analytics.flush())
        #expect(client["Amplitude"].events.isEmpty)

        var settings = client.analytics.settings.json
        settings["edgeFunction"] = ["version": 1, "downloadURL": .string(server.baseURL + "/bundle.js")]
        client.analytics.update(settings: Settings(settings))
        #expect(waitForEvents(client, 5))
        settle(client)
        #expect(client["Amplitude"].events.map { $0.event ?? "" } == (0..<5).map { "Seen \($0)" })
        #expect(signals.stats.shedBeforeReady == 0)
    }

    /// An event generator that answers every instrumentation signal with an event: without the
    /// origin mark this would never end.
    @Test func eventsMadeInProcessSignalDoNotLoop() throws {
        let bundle = """
            function processSignal(signal) {
                if (signal.type === SignalType.Instrumentation) analytics.track("Echo " + signal.data.rawEvent.event)
            }
            """
        let client = try start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        client.analytics.track("Checkout")
        settle(client)
        settle(client)
        #expect(client["Amplitude"].events.map { $0.event ?? "" } == ["Checkout", "Echo Checkout"])
        let echo = try #require(client["Amplitude"].events.last)
        #expect(echo.context["__eventOrigin"]?["type"]?.stringValue == SignalsOrigin.type)
        #expect(signals.stats.instrumented == 1 && signals.stats.loopGuarded == 1)
        // LivePlugins' own events (not from a signal) are still instrumented.
        #expect(signals.stats.emitted == 1)
    }

    @Test func aThrowingProcessSignalIsReportedAndTheNextSignalsStillRun() throws {
        let bundle = """
            function processSignal(signal) {
                if (signal.data.n === 1) throw new Error("bad signal " + signal.index)
                analytics.track("Ok " + signal.data.n)
            }
            """
        let client = try start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        for n in 0..<3 { signals.emit(userDefined: ["n": .number(Double(n))]) }
        settle(client)
        #expect(client["Amplitude"].events.map { $0.event ?? "" } == ["Ok 0", "Ok 2"])
        #expect(client.observer.contains("bad signal 1"))
    }

    private func waitForEvents(_ client: LiveClient, _ count: Int) -> Bool {
        let deadline = monotonicSeconds() + 10
        while monotonicSeconds() < deadline {
            _ = client.analytics.signals?.flush(timeout: 1)
            _ = client.analytics.flush()
            if client["Amplitude"].events.count >= count { return true }
        }
        return false
    }
}
