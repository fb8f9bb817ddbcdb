import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// docs/vendors/mixpanel.md, "Segment's behaviour / ours": each row's events through
/// `analytics-host run` with the library's default settings to the strict Mixpanel fake,
/// in-process and in a runner process (`--isolate`).
@Suite struct MixpanelMappingTableTests {
    static func events(_ fake: MixpanelFake, _ id: String) -> [JSONObject] {
        fake.events.filter { $0["properties"]?["$insert_id"]?.stringValue?.hasPrefix(id) == true }
    }

    static func profiles(_ fake: MixpanelFake, _ user: String) -> [JSONObject] {
        fake.profileUpdates.filter { $0["$distinct_id"]?.stringValue == user }
    }

    static let manyProperties = (0..<2000).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")
    static let deep = String(repeating: #"{"a":"#, count: 60) + "1" + String(repeating: "}", count: 60)
    static let time = #""timestamp":"2026-11-28T10:00:00Z""#

    static let rows: [MappingRow<MixpanelFake>] = [
        MappingRow(name: "track", events: [
            #"{"type":"track","event":"Song Played","userId":"user-track","anonymousId":"anon-track","messageId":"x-track",\#(time),"properties":{"title":"Ode"},"context":{"library":{"name":"analytics-python","version":"2.3.1"},"timezone":"Europe/Paris"}}"#,
        ]) { run in
            let p = events(run.fake, "x-track").first?["properties"]?.objectValue
            #expect(events(run.fake, "x-track").map { $0["event"]?.stringValue } == ["Song Played"])
            #expect(p?["distinct_id"] == "user-track" && p?["$user_id"] == "user-track" && p?["$device_id"] == "anon-track")
            #expect(p?["time"]?.intValue == epochMilliseconds("2026-11-28T10:00:00Z"))
            #expect(p?["title"] == "Ode")
            #expect(p?["mp_lib"] == "Segment Actions: analytics-python")
            #expect(p?["timezone"] == "Europe/Paris" && p?["$timezone"] == nil)
        },
        MappingRow(name: "insert_id", events: [
            #"{"type":"track","event":"Twice","userId":"user-insert","messageId":"x-insert",\#(time)}"#,
            #"{"type":"track","event":"Twice","userId":"user-insert","messageId":"x-insert",\#(time)}"#,
        ]) { run in
            #expect(run.fake.uniqueEvents.filter { $0["properties"]?["$insert_id"] == "x-insert" }.count == 1, "Mixpanel counts a re-sent event once")
        },
        MappingRow(name: "page and screen names", events: [
            #"{"type":"page","name":"Pricing","userId":"user-page","messageId":"x-page-1",\#(time)}"#,
            #"{"type":"screen","name":"Basket","userId":"user-page","messageId":"x-page-2",\#(time)}"#,
        ]) { run in
            #expect(events(run.fake, "x-page-").map { $0["event"]?.stringValue } == ["Viewed Pricing", "Viewed Basket"])
        },
        MappingRow(name: "unnamed page and screen", events: [
            #"{"type":"page","userId":"user-unnamed","messageId":"x-unnamed-1",\#(time)}"#,
            #"{"type":"screen","userId":"user-unnamed","messageId":"x-unnamed-2",\#(time)}"#,
        ]) { run in
            #expect(events(run.fake, "x-unnamed-").map { $0["event"]?.stringValue } == ["Loaded a Page", "Loaded a Screen"])
        },
        MappingRow(name: "identify", events: [
            #"{"type":"identify","userId":"user-identify","anonymousId":"anon-identify","messageId":"x-identify",\#(time),"traits":{"email":"zoe@example.com","name":"Zoë","firstName":"Zoë","plan":"pro"}}"#,
        ]) { run in
            let sent = events(run.fake, "x-identify")
            #expect(sent.map { $0["event"]?.stringValue } == ["$identify"])
            #expect(sent.first?["properties"]?["$identified_id"] == "user-identify" && sent.first?["properties"]?["$anon_id"] == "anon-identify")
            #expect(profiles(run.fake, "user-identify").map { $0["$set"] } == [["$email": "zoe@example.com", "$name": "Zoë", "$first_name": "Zoë", "plan": "pro"]])
        },
        MappingRow(name: "group", events: [
            #"{"type":"group","userId":"user-group","groupId":"g-initech","messageId":"x-group",\#(time),"traits":{"name":"Initech","createdAt":"2020-01-02","employees":250}}"#,
        ]) { run in
            let group = run.fake.groupUpdates.first { $0["$group_id"] == "g-initech" }
            #expect(group?["$group_key"] == "$group_id", "Segment's default group key")
            #expect(group?["$set"] == ["$name": "Initech", "$created": "2020-01-02", "employees": 250])
            #expect(profiles(run.fake, "user-group").map { $0["$union"] } == [["$group_id": ["g-initech"]]])
        },
        MappingRow(name: "Order Completed", events: [
            #"{"type":"track","event":"Order Completed","userId":"user-order","messageId":"x-order",\#(time),"properties":{"order_id":"o-1","revenue":31.25,"currency":"EUR","products":[{"product_id":"p-1","price":20},{"product_id":"p-2","price":5.625,"quantity":2}]}}"#,
        ]) { run in
            let sent = events(run.fake, "x-order")
            #expect(sent.map { $0["event"]?.stringValue } == ["Order Completed", "Product Purchased", "Product Purchased"])
            #expect(sent.map { $0["properties"]?["$insert_id"]?.stringValue } == ["x-order", "x-order-2", "x-order-3"])
            #expect(sent.last?["properties"]?["product_id"] == "p-2" && sent.last?["properties"]?["order_id"] == "o-1")
            #expect(sent.last?["properties"]?["revenue"] == nil && sent.last?["properties"]?["products"] == nil, "order totals stay on the order")
            #expect(profiles(run.fake, "user-order").map { $0["$append"]?["$transactions"]?["$amount"] } == [31.25])
        },
        MappingRow(name: "alias", events: [
            #"{"type":"alias","userId":"user-alias","previousId":"anon-alias","messageId":"x-alias",\#(time)}"#,
        ]) { run in
            #expect(events(run.fake, "x-alias").first?["properties"]?["$distinct_ids"] == ["anon-alias", "user-alias"])
        },
        MappingRow(name: "no geolocation by the sender", events: [
            #"{"type":"identify","userId":"user-ip","messageId":"x-ip-1",\#(time),"traits":{"plan":"pro"},"context":{"ip":"203.0.113.9"}}"#,
            #"{"type":"track","event":"Not Located","userId":"user-ip","messageId":"x-ip-2",\#(time)}"#,
        ]) { run in
            #expect(profiles(run.fake, "user-ip").first?["$ip"] == "203.0.113.9")
            #expect(events(run.fake, "x-ip-2").first?["properties"]?["ip"] == nil)
            #expect(run.fake.locatedAtSender.isEmpty, "\(run.fake.locatedAtSender)")
        },
        MappingRow(name: "limits", events: [
            #"{"type":"track","event":"Huge","userId":"user-limits","messageId":"x-limits",\#(time),"properties":{"long":"\#(String(repeating: "é", count: 200))","deep":\#(deep),"\#(String(repeating: "n", count: 300))":1,\#(manyProperties)}}"#,
        ]) { run in
            let p = events(run.fake, "x-limits").first?["properties"]?.objectValue
            #expect(p?.count == 255)
            #expect(p?["long"]?.stringValue?.utf8.count == 254, "cut at 255 bytes, never inside a character")
            #expect(p?["deep"] == nil && p?[String(repeating: "n", count: 300)] == nil)
            #expect(run.fake.overLimits.isEmpty, "\(run.fake.overLimits)")
            #expect(run.stderr.contains("the event x-limits was sent within Mixpanel's limits"), "\(run.stderr)")
        },
    ]

    static func run(isolated: Bool) -> Result<MappingRun<MixpanelFake>, any Error> {
        Result {
            let fake = try MixpanelFake()
            return try MappingRun.make(fake: fake, rows: rows, library: try MixpanelBuild.library(), file: "libmixpanel.so",
                                       integrations: #"{"Mixpanel":\#(MixpanelBuild.settings(fake))}"#, isolated: isolated)
        }
    }

    static let inProcess = run(isolated: false)
    static let isolated = run(isolated: true)

    @Test(arguments: rows, [false, true])
    func segmentsBehaviourOrOurs(row: MappingRow<MixpanelFake>, isolated: Bool) throws {
        let run = try (isolated ? Self.isolated : Self.inProcess).get()
        #expect(run.row("Mixpanel")?[0] == Self.rows.flatMap(\.events).count, "\(run.stdout)\n\(run.stderr)")
        row.check(run)
    }

    /// A track with revenue is an event and a profile $append: the $append goes only once the
    /// event was delivered, so the host's retry of a call whose event was not never counts the
    /// revenue twice (Mixpanel has no de-duplication for profile updates).
    @Test(arguments: [false, true])
    func aRetriedCallNeverAppendsItsRevenueTwice(isolated: Bool) throws {
        let dir = makeTempDirectory("mixpanel-append")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        fake.failNext(.status(503, body: "unavailable"))
        let events = [#"{"type":"track","event":"Bought","userId":"user-42","messageId":"m-bought",\#(Self.time),"properties":{"revenue":9.5}}"#]
        let result = try MixpanelBuild.run(integrations: #"{"Mixpanel":\#(MixpanelBuild.settings(fake))}"#, events: events, isolated: isolated, in: dir)
        #expect(MixpanelBuild.row("Mixpanel", in: result.stdout)?.prefix(2) == [1, 1], "\(result.stdout)\n\(result.stderr)")
        #expect(fake.uniqueEvents.count == 1)
        #expect(fake.profileUpdates.compactMap { $0["$append"] }.count == 1, "the revenue appended once: \(fake.profileUpdates)")
        #expect(fake.server.requests.first?.path.hasPrefix("/import") == true, "the event goes first; the $append waits for it")
    }
}
