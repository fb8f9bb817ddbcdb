import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// LivePlugins in server mode (`Configuration.identity = .server`): an event JavaScript makes
/// while its plugin processes someone's event belongs to that person (the event's ids), never to a
/// stored user (there is none) and never to nobody; in-process and in process mode alike.
@Suite(.enabled(if: LiveLibrary.available, Comment(rawValue: LiveLibrary.missing ?? "")))
struct LiveServerModeTests {
    static let bundle = """
        class HighValue extends LivePlugin {
            track(event) {
                if (event.event === "Order Completed") analytics.track("High Value Order", { order: event.properties.order })
                return event
            }
            identify(event) {
                analytics.track("Seen", { anon: analytics.anonymousId, user: analytics.userId })
                return event
            }
        }
        analytics.add(new HighValue(LivePluginType.enrichment, null))
        """

    @Test(arguments: [IsolationMode.inProcess, .process]) func eventsMadeInJavaScriptTakeTheIdsOfTheEventBeingProcessed(mode: IsolationMode) throws {
        let client = try LiveClient.start(options: ["fallbackBundle": .string(try writeBundle(Self.bundle))]) {
            $0.identity = .server
            if mode == .process {
                $0.isolation.byKey["LivePlugins"] = .process
                $0.isolation.scanCacheFile = ""
                if IsolatedCgroup.unavailableReason != nil { $0.isolation.memoryLimitBytes = 0 }
            }
        }
        defer { client.analytics.shutdown() }
        _ = try client.analytics.process(payload: ["type": "identify", "userId": "alice", "traits": ["plan": "pro"]])
        _ = try client.analytics.process(payload: ["type": "track", "event": "Order Completed", "anonymousId": "anon-bob",
                                                   "properties": ["order": "o-1"]])
        _ = try client.analytics.process(payload: ["type": "track", "event": "Order Completed", "userId": "carol", "anonymousId": "anon-carol",
                                                   "properties": ["order": "o-2"]])
        #expect(client.analytics.flush())
        #expect(client.analytics.flush())
        let events = client["Amplitude"].events
        let seen = try #require(events.first { $0.event == "Seen" }, "\(client.observer.errorMessages)")
        #expect(seen.userId == "alice" && seen.anonymousId == nil)
        #expect(seen.properties == ["anon": nil, "user": nil], "JavaScript reads no stored user: there is none")
        let orders = events.filter { $0.event == "High Value Order" }
        #expect(orders.count == 2, "\(client.observer.errorMessages)")
        let bob = try #require(orders.first { $0.properties["order"] == "o-1" })
        #expect(bob.userId == nil && bob.anonymousId == "anon-bob", "Bob's order, Bob's event: not Alice's")
        let carol = try #require(orders.first { $0.properties["order"] == "o-2" })
        #expect(carol.userId == "carol" && carol.anonymousId == "anon-carol")
        for e in events where e.event == "High Value Order" || e.event == "Seen" {
            #expect(e.context["os"] == nil && e.context["locale"] == nil && e.context["library"] != nil)
        }
        #expect(!client.observer.errorMessages.contains { $0.contains("neither") }, "\(client.observer.errorMessages)")
    }
}
