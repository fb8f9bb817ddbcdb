import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `Configuration.identity`: server mode keeps each event's ids and context its own (nothing
/// stored, nothing minted, nothing of the machine); device mode is the one stored user.
@Suite struct IdentityModeTests {
    static func serverClient(_ keys: [String] = ["D"]) -> (Analytics, ErrorLog, RecordingDestination) {
        let (analytics, errors) = makeClient(keys) { $0.identity = .server }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        return (analytics, errors, d)
    }

    /// Two people interleaved: after Alice's identify, Bob's anonymous events stay Bob's alone.
    @Test func twoPeopleInterleavedKeepTheirOwnIds() throws {
        let (analytics, errors, d) = Self.serverClient()
        defer { analytics.shutdown() }
        let messages: [JSONObject] = [
            ["type": "identify", "userId": "alice", "traits": ["plan": "pro"]],
            ["type": "track", "event": "Viewed", "anonymousId": "anon-bob"],
            ["type": "track", "event": "Bought", "userId": "alice"],
            ["type": "alias", "userId": "bob", "previousId": "anon-bob"],
            ["type": "screen", "name": "Home", "anonymousId": "anon-carol"],
            ["type": "track", "event": "Viewed", "anonymousId": "anon-bob"],
        ]
        for m in messages { _ = try analytics.process(payload: m) }
        #expect(analytics.flush())
        #expect(errors.all.isEmpty, "\(errors.messages)")
        let got = d.events
        #expect(got.count == messages.count)
        for (sent, received) in zip(messages, got) {
            #expect(received.userId == sent["userId"]?.stringValue, "\(received.payload)")
            #expect(received.anonymousId == sent["anonymousId"]?.stringValue, "\(received.payload)")
        }
        #expect(got[1].traits.isEmpty && got[1].payload["traits"] == nil, "Bob's track carries none of Alice's traits")
        // No user, none stored, none minted.
        #expect(analytics.userId == nil && analytics.anonymousId == "" && analytics.traits.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: analytics.configuration.storageDirectory + "/user.json"))
    }

    @Test func anEventWithNeitherIdIsRefusedWithTheReason() throws {
        let (analytics, errors, d) = Self.serverClient()
        defer { analytics.shutdown() }
        for ids in [[:], ["userId": "", "anonymousId": ""]] as [JSONObject] {
            var payload: JSONObject = ["type": "track", "event": "Nobody"]
            payload.merge(ids)
            #expect(throws: EventError.self) { try analytics.process(payload: payload) }
            do { _ = try analytics.process(payload: payload) } catch {
                #expect(error.description.contains("track has neither a userId nor an anonymousId"), "\(error)")
            }
        }
        // The typed calls have no user to carry: refused and reported, except identify with a userId.
        analytics.track("Typed")
        analytics.identify(userId: "dora", traits: ["a": 1])
        analytics.alias("erin")
        #expect(analytics.flush())
        #expect(d.events.map { $0.event ?? $0.type.rawValue } == ["identify"])
        #expect(d.events.first?.userId == "dora" && d.events.first?.anonymousId == nil && d.events.first?.traits == ["a": 1])
        let reported = errors.messages
        #expect(reported.contains { $0.contains("track has neither a userId nor an anonymousId") }, "\(reported)")
        #expect(reported.contains { $0.contains(#"alias("erin"): in server mode there is no current identity to link"#) }, "\(reported)")
        #expect(analytics.userId == nil, "identify in server mode stores nothing")
    }

    /// Server mode adds context.library and nothing of the machine; the event's own context keeps
    /// its keys, values and order. Device mode adds the machine's.
    @Test func serverModeAddsOnlyTheLibraryToTheEventsOwnContext() throws {
        let (analytics, _, d) = Self.serverClient()
        defer { analytics.shutdown() }
        let own: JSONObject = ["ip": "203.0.113.7", "os": ["name": "iOS", "version": "17.1"], "locale": "fr-FR",
                               "device": ["type": "ios", "model": "iPhone15,2"]]
        _ = try analytics.process(payload: ["type": "track", "event": "A", "userId": "u", "context": .object(own)])
        _ = try analytics.process(payload: ["type": "track", "event": "B", "userId": "u"])
        _ = try analytics.process(payload: ["type": "track", "event": "C", "userId": "u",
                                            "context": ["library": ["name": "analytics-python", "version": "2.3"], "timezone": "Asia/Tokyo"]])
        #expect(analytics.flush())
        let library: JSON = ["name": "analytics-host", "version": .string(HostVersion.string)]
        let (a, b, c) = (d.events[0].context, d.events[1].context, d.events[2].context)
        #expect(a.keys == ["ip", "os", "locale", "device", "library"], "the event's own keys, in order, then library")
        #expect(Array(a.storage.prefix(4)).map(\.key) == own.keys && a["os"] == own["os"] && a["device"] == own["device"] && a["locale"] == "fr-FR")
        #expect(a["library"] == library)
        #expect(b == ["library": library], "no os, device, locale or timezone of the host")
        #expect(c == ["library": ["name": "analytics-python", "version": "2.3"], "timezone": "Asia/Tokyo"], "a given library is kept")
        let text = String(decoding: d.events[0].serializedBytes, as: UTF8.self)
        #expect(text.contains(#""context":{"ip":"203.0.113.7","os":{"name":"iOS","version":"17.1"},"locale":"fr-FR","device":{"type":"ios","model":"iPhone15,2"},"library":"#))

        let (device, _) = makeClient(["D"])
        defer { device.shutdown() }
        let dd = RecordingDestination("D")
        device.add(plugin: dd)
        _ = try device.process(payload: ["type": "track", "event": "B", "userId": "u"])
        #expect(device.flush())
        let ctx = try #require(dd.events.first).context
        #expect(ctx["os"]?["name"] == "Linux" && ctx["device"]?["type"] == "linux" && ctx["locale"] != nil && ctx["timezone"] != nil)
    }

    /// Device mode stays one stored user: an identify read as a message becomes later events' user.
    @Test func deviceModeStillCarriesTheStoredUser() throws {
        let (analytics, _) = makeClient(["D"])
        defer { analytics.shutdown() }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        _ = try analytics.process(payload: ["type": "identify", "userId": "alice"])
        _ = try analytics.process(payload: ["type": "track", "event": "Next"])
        #expect(analytics.flush())
        #expect(d.events.last?.userId == "alice" && d.events.last?.anonymousId == analytics.anonymousId && !analytics.anonymousId.isEmpty)
    }

    /// A library reads no user in server mode (`user_id`/`anonymous_id` answer absent).
    @Test func librariesReadNoUserInServerMode() throws {
        let (analytics, _, _) = Self.serverClient()
        defer { analytics.shutdown() }
        let services = HostServices.forwarding(to: analytics, key: "D")
        #expect(services.userId() == nil && services.anonymousId() == nil)
        #expect(services.client?.traits() == [:])
    }
}

/// `run`'s derived messageIds (the rule of docs/command-line.md).
@Suite struct InputMessageIDsTests {
    static func ids(_ lines: [String]) -> [String] {
        var chain = InputMessageIDs()
        return lines.map { line in
            Array(line.utf8).withUnsafeBytes { chain.advance(line: $0) }
            return chain.current
        }
    }

    /// The 128-bit hash under the chain is SipHash-2-4-128: the specification's first vector
    /// (key 00…0f, empty message) and its 16th (message 00…0e).
    @Test func theHashIsSipHash128() {
        let key = SipHash24(key: Array(0..<16))
        let empty = [UInt8]().withUnsafeBytes { key.hash128($0) }
        #expect(empty.0 == 0xe6a8_25ba_047f_81a3 && empty.1 == 0x9302_55c7_1472_f66d)
        // Whole words before the tail give the same hash as the same bytes in one piece.
        let bytes = Array(UInt8(0)..<40)
        let whole = bytes.withUnsafeBytes { key.hash128($0) }
        func word(_ i: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[i * 8 + $1]) << (8 * UInt64($1)) } }
        let split = Array(bytes[24...]).withUnsafeBytes { key.hash128(word(0), word(1), word(2), $0) }
        #expect(whole == split)
    }

    @Test func theSameInputGivesTheSameIdsAndEveryLineItsOwn() {
        let input = [#"{"type":"track","event":"A","userId":"u"}"#, "", #"{"type":"track","event":"A","userId":"u"}"#, "not json"]
        let first = Self.ids(input)
        #expect(first == Self.ids(input), "the same bytes, the same ids")
        #expect(Set(first).count == input.count, "identical lines at different places are different events")
        for id in first {
            let parts = id.split(separator: "-")
            #expect(parts.map(\.count) == [8, 4, 4, 4, 12] && parts[2].first == "8", "a version-8 UUID: \(id)")
            #expect(id.allSatisfy { $0.isHexDigit || $0 == "-" } && id.count == 36, "Mixpanel's $insert_id: ≤ 36 of [A-Za-z0-9-]")
        }
        // Appending keeps the earlier ids; a change before line n changes line n's.
        #expect(Array(Self.ids(input + ["more"]).prefix(input.count)) == first)
        var changed = input
        changed[0] = #"{"type":"track","event":"B","userId":"u"}"#
        let other = Self.ids(changed)
        #expect(zip(first, other).allSatisfy { $0 != $1 })
        // A skipped line counts by its length.
        var a = InputMessageIDs(), b = InputMessageIDs()
        a.advance(skippedLineOf: 40_000)
        b.advance(skippedLineOf: 40_001)
        #expect(a.current != b.current)
    }
}
