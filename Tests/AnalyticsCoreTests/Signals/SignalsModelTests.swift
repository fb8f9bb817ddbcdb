import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct SignalsModelTests {
    @Test func constantsAreTheDocumentedStrings() {
        #expect(SignalType.allCases.map(\.rawValue) == ["interaction", "navigation", "network", "localData", "instrumentation", "userDefined"])
        #expect(NavigationAction.allCases.map(\.rawValue) == ["forward", "backward", "modal", "entering", "leaving", "page", "popup"])
        #expect(NetworkAction.allCases.map(\.rawValue) == ["request", "response"])
        #expect(LocalDataAction.allCases.map(\.rawValue) == ["loaded", "updated", "saved", "deleted", "undefined"])
        #expect(InstrumentationEventType.allCases.map(\.rawValue) == ["track", "screen", "identify", "group", "alias", "unknown"])
    }

    /// Today's shapes (analytics-swift-live 3.x); the earlier initializers keep the earlier
    /// members and add today's, as an earlier-shape input signal does.
    @Test func typedSignalsUseTheDocumentedDataFields() {
        #expect(NavigationSignal(currentScreen: "Cart", previousScreen: "Home").signalData == ["currentScreen": "Cart", "previousScreen": "Home"])
        #expect(NavigationSignal(action: .entering, screen: "Home").signalData == ["action": "entering", "screen": "Home", "currentScreen": "Home"])
        #expect(InteractionSignal(component: "button", title: "Add To Cart", data: ["sku": "A1"]).signalData
            == ["target": ["component": "button", "title": "Add To Cart", "data": ["sku": "A1"]]])
        #expect(NetworkSignal(action: .response, url: "http://x/product/1", body: ["id": 1], contentType: "application/json",
                              method: "GET", status: 404, requestId: "r1").signalData
            == ["action": "response", "url": "http://x/product/1", "body": ["id": 1], "contentType": "application/json",
                "method": "GET", "status": 404, "ok": false, "requestId": "r1"])
        #expect(NetworkSignal(action: .response, url: "http://x/product/1", statusCode: 200, data: ["id": 1]).signalData
            == ["action": "response", "url": "http://x/product/1", "statusCode": 200, "data": ["id": 1], "status": 200, "body": ["id": 1], "ok": true])
        #expect(LocalDataSignal(action: .saved, identifier: "cart", data: ["n": 2]).signalData
            == ["action": "saved", "identifier": "cart", "data": ["n": 2]])
        #expect(InstrumentationSignal(eventType: .track, rawEvent: ["event": "E"]).signalData == ["type": "track", "rawEvent": ["event": "E"]])
        #expect(UserDefinedSignal(data: ["that": "Robbie"]).signalType == .userDefined)
    }

    @Test func wireShapeIsTheDocumentedOne() throws {
        let signal = Signal(anonymousId: "a", type: .navigation, timestamp: "2026-11-23T10:00:00.000Z", index: 7,
                            context: ["library": ["name": "analytics-host"]], data: ["action": "entering", "screen": "S"])
        let text = String(decoding: signal.serializedBytes, as: UTF8.self)
        #expect(text == #"{"anonymousId":"a","type":"navigation","timestamp":"2026-11-23T10:00:00.000Z","index":7,"context":{"library":{"name":"analytics-host"}},"data":{"action":"entering","screen":"S"}}"#)
    }

    @Test func inputIsCheckedFieldByField() throws {
        func problem(_ text: String) -> String? {
            guard case .object(let o) = try! JSON(parsing: text) else { return "not an object" }
            do { _ = try SignalInput(json: o); return nil } catch { return error.message }
        }
        #expect(problem(#"{"type":"navigation","data":{"action":"entering","screen":"Home"}}"#) == nil)
        #expect(problem(#"{"data":{}}"#) == "missing \"type\"")
        #expect(problem(#"{"type":"clicks","data":{}}"#)?.hasPrefix("unknown type \"clicks\"") == true)
        #expect(problem(#"{"type":"navigation","data":{"action":"sideways","screen":"Home"}}"#)?.hasPrefix("\"data.action\" is \"sideways\", expected one of forward") == true)
        #expect(problem(#"{"type":"navigation","data":{"action":"entering"}}"#) == "missing \"data.currentScreen\" (or the earlier \"data.screen\")")
        #expect(problem(#"{"type":"navigation","data":{"currentScreen":"Cart","previousScreen":null}}"#) == nil)
        #expect(problem(#"{"type":"navigation","data":{"currentScreen":3}}"#) == "\"data.currentScreen\" must be a string, found a number")
        #expect(problem(#"{"type":"interaction","data":{"target":{"component":"button","title":"Buy","data":{"sku":"A"}}}}"#) == nil)
        #expect(problem(#"{"type":"interaction","data":{"target":{"title":"Buy"}}}"#) == "missing \"data.target.component\"")
        #expect(problem(#"{"type":"interaction","data":{"target":"button"}}"#) == "\"data.target\" must be an object, found a string")
        #expect(problem(#"{"type":"interaction","data":{}}"#) == "missing \"data.target\" (or the earlier \"data.component\")")
        #expect(problem(#"{"type":"network","data":{"action":"response","url":"u","status":200,"ok":true,"body":[1],"contentType":"application/json"}}"#) == nil)
        #expect(problem(#"{"type":"network","data":{"action":"response","url":"u","ok":"yes"}}"#) == "\"data.ok\" must be a boolean, found a string")
        #expect(problem(#"{"type":"network","data":{"action":"response","url":"u","statusCode":"200"}}"#)?.contains("statusCode") == true)
        #expect(problem(#"{"type":"interaction","data":{"component":7}}"#) == "\"data.component\" must be a string, found a number")
        #expect(problem(#"{"type":"instrumentation","data":{"type":"track"}}"#)?.contains("rawEvent") == true)
        #expect(problem(#"{"type":"localData","data":[]}"#) == "\"data\" must be an object, found an array")
        #expect(problem(#"{"type":"userDefined"}"#) == nil)
        #expect(problem(#"{"type":"userDefined","data":{"anything":[1,2]},"timestamp":5}"#) == "\"timestamp\" must be a string, found a number")
        #expect(problem(#"{"type":"userDefined","timestamp":"not-a-date"}"#)
                == "\"timestamp\" must be an ISO-8601 date-time such as 2026-11-22T10:00:00.000Z, not \"not-a-date\"")
        for bad in ["2026-02-30T10:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:00:00", "2026-11-22", "2026-11-22T10:00:00.Z",
                    "2026-11-22T10:00:00+0100", "2026-11-22T10:00:00Zjunk"] {
            #expect(problem(#"{"type":"userDefined","timestamp":"\#(bad)"}"#)?.hasPrefix("\"timestamp\" must be an ISO-8601") == true, "\(bad)")
        }
        for good in ["2026-11-22T10:00:00Z", "2024-02-29T23:59:60.123456Z", "2026-11-22T10:00:00.5+01:00", "2026-11-22t10:00:00-05:30"] {
            #expect(problem(#"{"type":"userDefined","timestamp":"\#(good)"}"#) == nil, "\(good)")
        }
    }

    /// An earlier-shape signal keeps its members and gets today's (analytics-swift-live 3.x) added,
    /// so a generator written for either shape reads it; today's shape passes as it is.
    @Test func earlierShapesAreConvertedToTodays() throws {
        func data(_ text: String) throws -> JSONObject {
            guard case .object(let o) = try JSON(parsing: text) else { return [:] }
            return try SignalInput(json: o).signalData
        }
        #expect(try data(#"{"type":"navigation","data":{"action":"entering","screen":"Home"}}"#)
            == ["action": "entering", "screen": "Home", "currentScreen": "Home"])
        #expect(try data(#"{"type":"interaction","data":{"component":"button","title":"Buy","data":{"sku":"A"}}}"#)
            == ["component": "button", "title": "Buy", "data": ["sku": "A"], "target": ["component": "button", "title": "Buy", "data": ["sku": "A"]]])
        #expect(try data(#"{"type":"network","data":{"action":"response","url":"u","statusCode":503,"data":{"e":1}}}"#)
            == ["action": "response", "url": "u", "statusCode": 503, "data": ["e": 1], "status": 503, "body": ["e": 1], "ok": false])
        let today = #"{"type":"network","data":{"action":"response","url":"u","body":{"id":1},"status":200,"ok":true,"contentType":"application/json"}}"#
        #expect(try data(today) == ["action": "response", "url": "u", "body": ["id": 1], "status": 200, "ok": true, "contentType": "application/json"])
        #expect(try data(#"{"type":"navigation","data":{"currentScreen":"Cart","previousScreen":"Home"}}"#)
            == ["currentScreen": "Cart", "previousScreen": "Home"])
    }

    /// analytics-next's web signals (a DOM element as the target, a URL change) are accepted and
    /// get today's members, as the earlier shapes do; their own members stay.
    @Test func webShapesAreAcceptedAndConverted() throws {
        func data(_ text: String) throws -> JSONObject {
            guard case .object(let o) = try JSON(parsing: text) else { return [:] }
            return try SignalInput(json: o).signalData
        }
        #expect(try data(#"{"type":"interaction","data":{"eventType":"click","target":{"id":"buy","nodeName":"BUTTON","tagName":"BUTTON","innerText":"Add to cart","attributes":{"class":"cta"}}}}"#)
            == ["eventType": "click", "target": ["id": "buy", "nodeName": "BUTTON", "tagName": "BUTTON", "innerText": "Add to cart",
                                                 "attributes": ["class": "cta"], "component": "button", "title": "Add to cart"]])
        #expect(try data(#"{"type":"interaction","data":{"eventType":"submit","submitter":{"tagName":"FORM","title":"Sign up"}}}"#)
            == ["eventType": "submit", "submitter": ["tagName": "FORM", "title": "Sign up"], "target": ["tagName": "FORM", "title": "Sign up", "component": "form"]])
        #expect(try data(#"{"type":"interaction","data":{"eventType":"change","target":{},"change":{"value":"x"},"listener":"onchange"}}"#)
            == ["eventType": "change", "target": ["component": "change"], "change": ["value": "x"], "listener": "onchange"])
        #expect(try data(#"{"type":"navigation","data":{"action":"urlChange","url":"https://shop.example/cart?x=1","path":"/cart","hash":"","search":"?x=1","prevUrl":"https://shop.example/"}}"#)
            == ["action": "urlChange", "url": "https://shop.example/cart?x=1", "path": "/cart", "hash": "", "search": "?x=1",
                "prevUrl": "https://shop.example/", "currentScreen": "/cart", "previousScreen": "https://shop.example/"])
        #expect(try data(#"{"type":"navigation","data":{"action":"pageLoad","url":"https://shop.example/","title":"Shop"}}"#)
            == ["action": "pageLoad", "url": "https://shop.example/", "title": "Shop", "currentScreen": "https://shop.example/"])
        func problem(_ text: String) -> String? {
            guard case .object(let o) = try! JSON(parsing: text) else { return "not an object" }
            do { _ = try SignalInput(json: o); return nil } catch { return error.message }
        }
        #expect(problem(#"{"type":"interaction","data":{"eventType":"hover","target":{}}}"#)?.hasPrefix("\"data.eventType\" must be click, submit or change") == true)
        #expect(problem(#"{"type":"interaction","data":{"eventType":"click"}}"#) == "missing \"data.target\" (a web interaction signal)")
        #expect(problem(#"{"type":"interaction","data":{"eventType":"click","target":"b"}}"#) == "\"data.target\" must be an object, found a string")
        #expect(problem(#"{"type":"navigation","data":{"action":"reload","url":"u"}}"#)?.contains("expected urlChange or pageLoad") == true)
        #expect(problem(#"{"type":"navigation","data":{"url":7}}"#) == "\"data.url\" must be a string, found a number")
    }

    @Test func obfuscationKeepsShapeAndWhatHappened() {
        let signal = Signal(anonymousId: "a", type: .interaction, timestamp: "t", index: 0,
                            data: ["component": "textField", "title": "Email", "data": ["value": "me@example.com", "n": 3, "ok": true]])
        let hidden = SignalObfuscation.obfuscate(signal)
        #expect(hidden.data == ["component": "textField", "title": "***", "data": ["value": "***", "n": 0, "ok": true]])
        #expect(hidden.index == 0 && hidden.type == .interaction)
        let today = Signal(anonymousId: "a", type: .interaction, timestamp: "t", index: 1,
                           data: InteractionSignal(component: "textField", title: "Email", data: ["value": "me@example.com"]).signalData)
        #expect(SignalObfuscation.obfuscate(today).data == ["target": ["component": "textField", "title": "***", "data": ["value": "***"]]])
    }

    @Test func segmentHostsAreAlwaysBlocked() {
        var c = SignalsConfiguration()
        c.blockedNetworkHosts = ["internal.myapp.com"]
        for host in ["api.segment.com", "cdn-settings.segment.com", "signals.segment.com", "api.segment.build",
                     "cdn.segment.build", "signals.segment.build", "api.segment.io", "internal.myapp.com"] {
            #expect(c.effectiveBlockedHosts.contains(host), "\(host)")
        }
        #expect(SignalsConfiguration().maximumBufferSize == 1000 && SignalsConfiguration().relayCount == 20)
        #expect(SignalsConfiguration().relayInterval == 60 && SignalsConfiguration().allowedNetworkHosts == ["*"])
        #expect(SignalsConfiguration().broadcasters.first is SegmentBroadcaster)
    }

    @Test func settingsCarryTheSameKeysAndBadValuesAreNamed() throws {
        let settings = try Settings(parsing: #"""
            {"signals": {"maximumBufferSize": 50, "relayCount": 5, "relayInterval": 2.5,
                         "allowedNetworkHosts": ["*.example.com"], "blockedNetworkHosts": ["x.example.com"],
                         "broadcasters": [{"type": "debug"}, {"type": "webhook", "url": "http://127.0.0.1:9/hook"}]}}
            """#)
        let (c, problems) = SignalsConfiguration().applying(settings: settings)
        #expect(problems.isEmpty)
        #expect(c.debugMode == false)
        #expect(try SignalsConfiguration().applying(settings: Settings(parsing: #"{"signals": {"debugMode": true}}"#)).configuration.debugMode)
        #expect(try SignalsConfiguration().applying(settings: Settings(parsing: #"{"signals": {"debugMode": "yes"}}"#)).problems
            == ["signals.debugMode: expected true or false, found \"yes\""])
        #expect(c.maximumBufferSize == 50 && c.relayCount == 5 && c.relayInterval == 2.5)
        #expect(c.allowedNetworkHosts == ["*.example.com"] && c.blockedNetworkHosts == ["x.example.com"])
        #expect(c.broadcasters.count == 2 && c.broadcasters[0] is DebugBroadcaster && c.broadcasters[1] is WebhookBroadcaster)

        let bad = try Settings(parsing: #"{"signals": {"relayCount": -1, "allowedNetworkHosts": "all", "broadcasters": [{"type": "carrier-pigeon"}]}}"#)
        let (kept, issues) = SignalsConfiguration().applying(settings: bad)
        #expect(kept.relayCount == 20 && kept.allowedNetworkHosts == ["*"] && kept.broadcasters.first is SegmentBroadcaster)
        #expect(issues.count == 3)
        #expect(issues.contains { $0.hasPrefix("signals.relayCount:") })
        #expect(issues.contains { $0.hasPrefix("signals.allowedNetworkHosts:") })
        #expect(issues.contains { $0 == "signals.broadcasters.0: unknown broadcaster type \"carrier-pigeon\"" })
    }
}
