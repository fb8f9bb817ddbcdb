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

    @Test func typedSignalsUseTheDocumentedDataFields() {
        #expect(NavigationSignal(action: .entering, screen: "Home").signalData == ["action": "entering", "screen": "Home"])
        #expect(InteractionSignal(component: "button", title: "Add To Cart", data: ["sku": "A1"]).signalData
            == ["component": "button", "title": "Add To Cart", "data": ["sku": "A1"]])
        #expect(NetworkSignal(action: .response, url: "http://x/product/1", statusCode: 200, data: ["id": 1]).signalData
            == ["action": "response", "url": "http://x/product/1", "statusCode": 200, "data": ["id": 1]])
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
        #expect(problem(#"{"type":"navigation","data":{"action":"entering"}}"#) == "missing \"data.screen\"")
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

    @Test func obfuscationKeepsShapeAndWhatHappened() {
        let signal = Signal(anonymousId: "a", type: .interaction, timestamp: "t", index: 0,
                            data: ["component": "textField", "title": "Email", "data": ["value": "me@example.com", "n": 3, "ok": true]])
        let hidden = SignalObfuscation.obfuscate(signal)
        #expect(hidden.data == ["component": "textField", "title": "***", "data": ["value": "***", "n": 0, "ok": true]])
        #expect(hidden.index == 0 && hidden.type == .interaction)
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
