import AnalyticsTestSupport
import Foundation
import Testing
import LoopbackHTTP
@testable import AnalyticsCore

/// Signals as analytics-swift-live 3.x sends them and as the references' generator bundles and
/// the official signals runtime use them: today's shapes, a `signals` global the bundle replaces,
/// and `signals.debugMode` from the settings turning the Segment broadcaster on.
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct LiveCompatibilitySignalsTests {
    static func start(_ bundle: String, settings: JSONObject = [:],
                      signals: (inout SignalsConfiguration) -> Void = { _ in }) throws -> LiveClient {
        try LiveClient.start(destinations: ["Amplitude"], settings: settings,
                             options: ["fallbackBundle": .string(try writeBundle(bundle))]) {
            var c = quietSignals()
            signals(&c)
            $0.signals = c
        }
    }

    static func settle(_ client: LiveClient) {
        #expect(client.analytics.signals?.flush(timeout: 10) == true)
        #expect(client.analytics.flush())
    }

    /// MyEdgeFunctions.js-shaped generators read navigation `currentScreen`, interaction
    /// `target.title` and a network signal's `body`, found with signals.find (the references'
    /// testFullStackSignalProcessingWithCustomJS).
    @Test func generatorsReadTodaysShapes() throws {
        let bundle = """
            function screenCall(currentSignal) {
                if (currentSignal.type == "navigation") {
                    analytics.screen(currentSignal.data.currentScreen, "category", { prop1: "hello", from: currentSignal.data.previousScreen })
                }
            }
            function trackAddToCart(currentSignal) {
                if (currentSignal.type == "interaction" && currentSignal.data.target.title == "Add to cart") {
                    var properties = new Object()
                    let network = signals.find(currentSignal, "network", (signal) => signal.data.url.includes("/products"))
                    if (network) {
                        properties.price = network.data.body.price
                        properties.productId = network.data.body.id
                        properties.ok = network.data.ok
                    }
                    analytics.track(currentSignal.data.target.title, properties)
                }
            }
            function processSignal(signal) {
                screenCall(signal)
                trackAddToCart(signal)
            }
            """
        let client = try Self.start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NavigationSignal(currentScreen: "Test Screen", previousScreen: "Root"))
        signals.emit(NetworkSignal(action: .response, url: "https://example.com/products/1", body: ["id": "1", "price": 10.0],
                                   contentType: "application/json", status: 200, requestId: "1234"))
        signals.emit(InteractionSignal(component: "button", title: "Add to cart"))
        Self.settle(client)
        let events = client["Amplitude"].events
        let screen = try #require(events.first { $0.type == .screen })
        #expect(screen.name == "Test Screen" && screen.payload["category"] == "category")
        #expect(screen.properties == ["prop1": "hello", "from": "Root"])
        let cart = try #require(events.first { $0.event == "Add to cart" })
        #expect(cart.properties == ["price": 10.0, "productId": "1", "ok": true])
        #expect(client.observer.errors.isEmpty, "\(client.observer.errorMessages)")
    }

    /// The same generators fed earlier-shape input (a recorded session, an older emitter): the
    /// host adds today's members, so they still work.
    @Test func earlierShapesReachTodaysGenerators() throws {
        let bundle = """
            function processSignal(signal) {
                if (signal.type == "navigation") analytics.screen(signal.data.currentScreen)
                if (signal.type == "interaction") analytics.track(signal.data.target.title, { status: signals.find(signal, "network").data.status })
            }
            """
        let client = try Self.start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        _ = try signals.emit(json: ["type": "navigation", "data": ["action": "entering", "screen": "Old Screen"]])
        _ = try signals.emit(json: ["type": "network", "data": ["action": "response", "url": "https://x/products/2", "statusCode": 201, "data": [:]]])
        _ = try signals.emit(json: ["type": "interaction", "data": ["component": "button", "title": "Old Button"]])
        Self.settle(client)
        let events = client["Amplitude"].events
        #expect(events.first { $0.type == .screen }?.name == "Old Screen")
        #expect(events.first { $0.event == "Old Button" }?.properties["status"] == 201)
    }

    /// A bundle that installs its own signals runtime (as Segment's mobile signals runtime does:
    /// it assigns a new global `signals` with add/getNextIndex/find/filter and the constants, with
    /// EventType.Page) is fed through that object: processSignal finds the signals in its buffer.
    @Test func aSignalsGlobalTheBundleInstallsIsTheOneFed() throws {
        let bundle = """
            class MobileRuntime {
                constructor() { this.signalBuffer = []; this.signalCounter = 0; this.maxBufferSize = 1000; this.installedByBundle = true }
                add(signal) {
                    if ("index" in signal && signal.index == -1) signal.index = this.getNextIndex()
                    this.signalBuffer.unshift(signal)
                    if (this.signalBuffer.length > this.maxBufferSize) this.signalBuffer.pop()
                }
                getNextIndex() { return this.signalCounter++ }
                filter(fromSignal, signalType, predicate) {
                    return this.signalBuffer.slice(this.signalBuffer.indexOf(fromSignal) + 1)
                        .filter((s) => s.type === signalType).filter((s) => (predicate ? predicate(s) : true))
                }
                find(fromSignal, signalType, predicate) { return this.filter(fromSignal, signalType, predicate)[0] }
            }
            Object.assign(globalThis, { signals: new MobileRuntime() },
                          { EventType: Object.freeze({ Track: "track", Page: "page", Screen: "screen" }) })
            function processSignal(signal) {
                if (signal.type !== "navigation") return
                analytics.track("Seen", { buffered: signals.signalBuffer.length, earlier: signals.filter(signal, "navigation").length,
                                          installed: signals.installedByBundle === true, page: EventType.Page,
                                          bufferSize: signals.maxBufferSize })
            }
            """
        let client = try Self.start(bundle, signals: { $0.maximumBufferSize = 50 })
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NavigationSignal(currentScreen: "A"))
        signals.emit(NavigationSignal(currentScreen: "B"))
        Self.settle(client)
        let seen = client["Amplitude"].events.filter { $0.event == "Seen" }.map(\.properties)
        #expect(seen.last == ["buffered": 2, "earlier": 1, "installed": true, "page": "page", "bufferSize": 50], "\(seen)")
    }

    /// Without a runtime of the bundle's own, the built-in `signals` has the official runtime's
    /// filter and EventType.Page too.
    @Test func theBuiltInRuntimeHasFilterAndPage() throws {
        let bundle = """
            function processSignal(signal) {
                analytics.track("Seen", { filtered: signals.filter(null, "navigation").map((s) => s.data.currentScreen),
                                          page: EventType.Page })
            }
            """
        let client = try Self.start(bundle)
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        signals.emit(NavigationSignal(currentScreen: "A"))
        signals.emit(NavigationSignal(currentScreen: "B"))
        Self.settle(client)
        let seen = client["Amplitude"].events.filter { $0.event == "Seen" }.map(\.properties)
        #expect(seen.last == ["filtered": ["B", "A"], "page": "page"], "\(seen)")
    }

    /// `signals.debugMode` in the settings turns the Segment broadcaster on (analytics-swift-live's
    /// testSendToSegment), on a refresh too; without it nothing is sent.
    @Test func debugModeFromTheSettingsTurnsTheSegmentBroadcasterOn() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        var options = SegmentBroadcaster.Options()
        options.apiHost = server.baseURL + "/v1"
        let client = try Self.start("function processSignal(signal) {}", signals: {
            $0.broadcasters = [SegmentBroadcaster(options: options)]
        })
        defer { client.analytics.shutdown() }
        let signals = try #require(client.analytics.signals)
        _ = signals.emit(LocalDataSignal(action: .loaded, identifier: "1234", data: ["price": "19.95", "customer_name": "John Doe"]))
        Self.settle(client)
        #expect(server.requestCount == 0, "not in debug mode")

        var json = client.analytics.settings.json
        json["signals"] = ["debugMode": true]
        client.analytics.update(settings: Settings(json), type: .refresh)
        _ = signals.emit(LocalDataSignal(action: .loaded, identifier: "1234", data: ["price": "19.95", "customer_name": "John Doe"]))
        Self.settle(client)
        #expect(server.waitForRequests(1, timeout: 10))
        let body = try #require(server.requests.first.flatMap { parseObject($0.body) })
        let event = try #require(body["batch"]?[0]?.objectValue)
        #expect(event["event"] == "Segment Signal Generated" && body["writeKey"] == "live-key")
        #expect(event["properties"]?["data"]?["data"] == ["price": "***", "customer_name": "***"], "obfuscated by default")
    }
}
