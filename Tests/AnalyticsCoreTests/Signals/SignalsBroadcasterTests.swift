import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct SignalsBroadcasterTests {
    private func batches(_ server: LoopbackHTTPServer) -> [[JSONObject]] {
        server.requests.compactMap { parseObject($0.body)?["batch"]?.arrayValue?.compactMap(\.objectValue) }
    }

    @Test func webhookPostsBatchesOfRelayCountInOrder() throws {
        let server = try LoopbackHTTPServer()
        let hook = WebhookBroadcaster(url: URL(string: server.baseURL + "/hooks/signals")!)
        let signals = Signals(configuration: quietSignals { $0.broadcasters = [hook]; $0.relayCount = 3 })
        for i in 0..<7 { signals.emit(NavigationSignal(action: .entering, screen: "S\(i)")) }
        #expect(signals.flush(timeout: 10))
        let sent = batches(server)
        #expect(sent.map(\.count) == [3, 3, 1])
        #expect(sent.flatMap { $0 }.compactMap { $0["index"]?.intValue } == Array(0..<7))
        #expect(sent.flatMap { $0 }.compactMap { $0["data"]?["screen"]?.stringValue } == (0..<7).map { "S\($0)" })
        let request = try #require(server.requests.first)
        #expect(request.method == "POST" && request.path == "/hooks/signals")
        #expect(request.header("Content-Type") == "application/json")
        #expect(hook.counts.sent == 7 && hook.counts.dropped == 0)
        signals.shutdown()
    }

    @Test func webhookRetriesAFailedBatchAndReportsARefusedOne() throws {
        let server = try LoopbackHTTPServer()
        server.enqueue(.status(503))
        server.enqueue(.status(500))
        let sleeper = RecordingSleeper()
        let errors = ErrorLog()
        let hook = WebhookBroadcaster(url: URL(string: server.baseURL + "/hook")!, sleeper: sleeper)
        let signals = Signals(configuration: quietSignals { $0.broadcasters = [hook]; $0.relayCount = 2 }, report: errors.handler)
        signals.emit(userDefined: ["n": 1])
        signals.emit(userDefined: ["n": 2])
        #expect(signals.flush(timeout: 10))
        #expect(server.requestCount == 3)  // 503, 500, 200
        #expect(server.requests.last?.header("X-Retry-Count") == "2")
        #expect(sleeper.waits.count == 2)
        #expect(batches(server).last?.count == 2)
        #expect(hook.counts.sent == 2)

        server.enqueue(.status(400))
        signals.emit(userDefined: ["n": 3])
        #expect(signals.flush(timeout: 10))
        #expect(hook.counts.dropped == 1)
        #expect(errors.messages.contains { $0.contains("refused 1 signals with HTTP 400") })
        signals.shutdown()
    }

    @Test func relayHappensOnTheIntervalWithoutAFlush() throws {
        let server = try LoopbackHTTPServer()
        let hook = WebhookBroadcaster(url: URL(string: server.baseURL + "/hook")!)
        let signals = Signals(configuration: quietSignals { $0.broadcasters = [hook]; $0.relayCount = 100; $0.relayInterval = 0.2 })
        signals.emit(userDefined: ["a": 1])
        signals.emit(userDefined: ["b": 2])
        #expect(server.waitForRequests(1, timeout: 10))
        #expect(batches(server).first?.count == 2)
        signals.shutdown()
    }

    @Test func segmentBroadcasterSendsOnlyInDebugMode() throws {
        let server = try LoopbackHTTPServer()
        var options = SegmentBroadcaster.Options()
        options.apiHost = server.baseURL + "/v1"
        let release = Signals(configuration: quietSignals { $0.broadcasters = [SegmentBroadcaster(options: options)] }, writeKey: "wk")
        release.emit(NavigationSignal(action: .entering, screen: "Home"))
        #expect(release.flush(timeout: 10))
        release.shutdown()
        #expect(server.requestCount == 0)

        let debug = Signals(configuration: quietSignals { $0.broadcasters = [SegmentBroadcaster(options: options)]; $0.debugMode = true },
                            writeKey: "wk")
        debug.emit(InteractionSignal(component: "button", title: "Add To Cart", data: ["sku": "A-1", "qty": 2]))
        #expect(debug.flush(timeout: 10))
        debug.shutdown()
        #expect(server.requestCount == 1)
        let request = try #require(server.requests.first)
        #expect(request.path == "/v1/b")
        #expect(request.header("Authorization") == "Basic " + Data("wk:".utf8).base64EncodedString())
        let body = try #require(parseObject(request.body))
        #expect(body["writeKey"] == "wk" && body["sentAt"]?.stringValue?.hasSuffix("Z") == true)
        let event = try #require(body["batch"]?[0]?.objectValue)
        #expect(event["type"] == "track" && event["event"] == "Segment Signal Generated")
        #expect(event["properties"]?["type"] == "interaction" && event["properties"]?["index"] == 0)
        // Obfuscated by default: what happened stays, what was typed does not.
        #expect(event["properties"]?["data"] == ["target": ["component": "button", "title": "***", "data": ["sku": "***", "qty": 0]]])
    }

    @Test func segmentBroadcasterCanSendRealValues() throws {
        let server = try LoopbackHTTPServer()
        var options = SegmentBroadcaster.Options()
        options.apiHost = server.baseURL + "/v1"
        let signals = Signals(configuration: quietSignals {
            $0.broadcasters = [SegmentBroadcaster(options: options)]; $0.debugMode = true; $0.obfuscateBroadcasts = false
        }, writeKey: "wk")
        signals.emit(NavigationSignal(action: .entering, screen: "Home"))
        #expect(signals.flush(timeout: 10))
        signals.shutdown()
        let body = try #require(server.requests.first.flatMap { parseObject($0.body) })
        #expect(body["batch"]?[0]?["properties"]?["data"] == ["action": "entering", "screen": "Home", "currentScreen": "Home"])
    }

    @Test func debugBroadcasterWritesEachSignalToTheLog() throws {
        let lines = LogLines()
        let signals = Signals(configuration: quietSignals { $0.broadcasters = [DebugBroadcaster()] }, log: lines.logHandler)
        signals.emit(LocalDataSignal(action: .saved, identifier: "cart"))
        #expect(signals.flush(timeout: 5))
        signals.shutdown()
        let line = try #require(lines.all.first)
        #expect(line.hasPrefix("signal {\"anonymousId\""))
        #expect(line.contains(#""data":{"action":"saved","identifier":"cart"}"#))
    }

    @Test func settingsReplaceTheBroadcasters() throws {
        let server = try LoopbackHTTPServer()
        let (analytics, errors) = makeClient { $0.signals = quietSignals() }
        let signals = try #require(analytics.signals)
        analytics.update(settings: try Settings(parsing: #"{"integrations": {}, "signals": {"relayCount": 2, "broadcasters": [{"type": "webhook", "url": "\#(server.baseURL)/from-settings"}]}}"#))
        #expect(signals.currentConfiguration.relayCount == 2)
        signals.emit(userDefined: ["x": 1])
        signals.emit(userDefined: ["x": 2])
        #expect(signals.flush(timeout: 10))
        #expect(server.requests.map(\.path) == ["/from-settings"])
        #expect(errors.all.isEmpty)
        analytics.shutdown()
    }
}
