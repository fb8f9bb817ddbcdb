import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// With several loaded destinations the client writes each event's text once, and fan-out queues
/// a destination that takes text alone (nothing else in its timeline) the text, not the event.
/// Whatever that destination's timeline becomes meanwhile, every event still meets it.
@Suite struct TextFanOutTests {
    /// Renames every track it sees: visible in the parity probe's log ("track <name>").
    final class Renamer: Plugin {
        let type: PluginType = .enrichment
        func execute(_ event: Event) -> Event? {
            var event = event
            event.payload["event"] = "Renamed"
            return event
        }
    }

    static let libraries = [ExtensionClient.Library(fixture: "parity_probe", name: "parity"),
                            ExtensionClient.Library(fixture: "parity_probe", name: "second", defines: ["KEY=\"Second\""])]
    static let settings: JSONObject = ["integrations": ["Parity": [:], "Second": [:]]]

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aPluginAddedWhileEventsTravelAsTextSeesEveryLaterEvent(mode: IsolationMode) throws {
        let client = try ExtensionClient(libraries: Self.libraries, settings: Self.settings, mode: mode)
        let analytics = client.analytics
        for i in 0..<20 { analytics.track("Before \(i)") }
        #expect(analytics.flush())
        let parity = try #require(analytics.find(key: "Parity"))
        #expect(analytics.timeline.worker(forKey: "Parity")?.takesText == true, "a bare timeline takes text")

        // Fan-out still queues text (the worker learns of the plugin at its next event): that
        // event is read back from its text and meets the plugin, as do those after it.
        parity.add(plugin: Renamer())
        for i in 0..<5 { analytics.track("After \(i)") }
        #expect(analytics.flush())
        #expect(analytics.timeline.worker(forKey: "Parity")?.takesText == false)
        let parityTracks = client.lines(of: "Parity").filter { $0.hasPrefix("track ") }
        #expect(parityTracks == (0..<20).map { "track Before \($0)" } + Array(repeating: "track Renamed", count: 5), "\(parityTracks)")
        // The other destination's timeline is its own: it still takes the text as written.
        let secondTracks = client.lines(of: "Second").filter { $0.hasPrefix("track ") }
        #expect(secondTracks == (0..<20).map { "track Before \($0)" } + (0..<5).map { "track After \($0)" }, "\(secondTracks)")
        #expect(analytics.timeline.stats(forKey: "Parity")?.delivered == 25)
        #expect(analytics.shutdown())
        #expect(client.errors.messages.isEmpty, "\(client.errors.messages)")
    }

    @Test func anEventReadBackFromItsTextIsTheEventWithTheSameText() throws {
        var event = try Event(payload: ["type": "track", "event": "E", "messageId": "m-1",
                                        "properties": ["big": .number(JSONNumber(text: "123456789012345678901234567890")!), "s": "é\"\\"]])
        event.shareEncoding()
        event.computeSharedEncoding()
        let encoded = try #require(EncodedEvent(published: event))
        let back = encoded.event
        #expect(back.type == .track)
        #expect(back.payload == event.payload)
        #expect(back.withSerializedBytes { [UInt8]($0) } == event.payload.serializedBytes())
        // Not yet written: no text to take.
        var fresh = try Event(payload: ["type": "screen", "name": "Home"])
        fresh.shareEncoding()
        #expect(EncodedEvent(published: fresh) == nil)
        #expect(EncodedEvent(fresh).withText { [UInt8]($0) } == fresh.payload.serializedBytes())
    }

    /// Destinations' workers turn one shared event into text at once: one writes the shared text,
    /// the others find it being written and write their own; each gets the whole text (this
    /// trapped while a worker found the shared text half-claimed).
    @Test func workersTurningOneEventIntoTextAtOnceEachGetTheWholeText() throws {
        let events = (0..<300).map { i -> Event in
            var e = try! Event(payload: ["type": "track", "event": .string("E\(i)"), "properties": ["i": .number(JSONNumber(i))]])
            e.shareEncoding()
            return e
        }
        let expected = events.map { $0.payload.serializedBytes() }
        let seen = Locked<[[[UInt8]]]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let mine = events.map { EncodedEvent($0).withText { [UInt8]($0) } }
            seen.withLock { $0.append(mine) }
        }
        for texts in seen.withLock({ $0 }) { #expect(texts == expected) }
    }
}
