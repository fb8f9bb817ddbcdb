import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// docs/vendors/amplitude.md, "Segment's behaviour / ours": each row's events through
/// `analytics-host run` with the library's default settings to the strict Amplitude fake,
/// in-process and in a runner process (`--isolate`).
@Suite struct AmplitudeMappingTableTests {
    static func events(_ fake: AmplitudeFake, _ id: String) -> [JSONObject] {
        fake.events.filter { $0["insert_id"]?.stringValue?.hasPrefix(id) == true }
    }

    static let manyProperties = (0..<2000).map { #""p\#($0)":\#($0)"# }.joined(separator: ",")

    static let rows: [MappingRow<AmplitudeFake>] = [
        MappingRow(name: "track", events: [
            #"{"type":"track","event":"Song Played","userId":"user-track","anonymousId":"anon-track","messageId":"a-track","timestamp":"2026-11-25T10:00:00.250+01:00","properties":{"title":"Ode","plays":3},"context":{"device":{"id":"device-track","type":"ios"}}}"#,
        ]) { run in
            let sent = events(run.fake, "a-track")
            #expect(sent.count == 1)
            #expect(sent.first?["event_type"] == "Song Played")
            #expect(sent.first?["user_id"] == "user-track")
            #expect(sent.first?["device_id"] == "device-track", "context.device.id before anonymousId")
            #expect(sent.first?["time"]?.intValue == epochMilliseconds("2026-11-25T09:00:00.250Z"))
            #expect(sent.first?["event_properties"] == ["title": "Ode", "plays": 3])
            #expect(sent.first?["platform"] == "iOS")
        },
        MappingRow(name: "insert_id", events: [
            #"{"type":"track","event":"Twice","userId":"user-insert","messageId":"a-insert"}"#,
            #"{"type":"track","event":"Twice","userId":"user-insert","messageId":"a-insert"}"#,
        ]) { run in
            #expect(events(run.fake, "a-insert").allSatisfy { $0["insert_id"] == "a-insert" })
            #expect(run.fake.uniqueEvents.filter { $0["insert_id"] == "a-insert" }.count == 1, "Amplitude counts a re-sent event once")
        },
        MappingRow(name: "page and screen names", events: [
            #"{"type":"page","name":"Pricing","userId":"user-page","messageId":"a-page-1","properties":{"path":"/pricing"}}"#,
            #"{"type":"screen","name":"Basket","userId":"user-page","messageId":"a-page-2"}"#,
        ]) { run in
            #expect(events(run.fake, "a-page-").map { $0["event_type"]?.stringValue } == ["Viewed Pricing", "Viewed Basket"])
            #expect(events(run.fake, "a-page-1").first?["event_properties"] == ["path": "/pricing"])
        },
        MappingRow(name: "unnamed page and screen", events: [
            #"{"type":"page","userId":"user-unnamed","messageId":"a-unnamed-1"}"#,
            #"{"type":"screen","userId":"user-unnamed","messageId":"a-unnamed-2"}"#,
        ]) { run in
            #expect(events(run.fake, "a-unnamed-").map { $0["event_type"]?.stringValue } == ["Loaded a Page", "Loaded a Screen"])
        },
        MappingRow(name: "Order Completed", events: [
            #"{"type":"track","event":"Order Completed","userId":"user-order","messageId":"a-order","properties":{"order_id":"o-1","revenue":31.25,"products":[{"product_id":"p-1","price":20,"quantity":1},{"product_id":"p-2","price":5.625,"quantity":2}]}}"#,
        ]) { run in
            let sent = events(run.fake, "a-order")
            #expect(sent.map { $0["event_type"]?.stringValue } == ["Order Completed", "Product Purchased", "Product Purchased"])
            #expect(sent.map { $0["insert_id"]?.stringValue } == ["a-order", "a-order-2", "a-order-3"])
            #expect(sent.first?["revenue"] == 31.25 && sent.first?["revenueType"] == "Purchase")
            #expect(sent.last?["event_properties"]?["product_id"] == "p-2")
        },
        MappingRow(name: "one refused event of a call", events: [
            #"{"type":"track","event":"Order Completed","userId":"user-refused","messageId":"a-refused","properties":{"order_id":"o-2","products":[{"product_id":"p-ok"},{"product_id":"p-refused"}]}}"#,
        ]) { run in
            // The fake refuses the second product's event (as Amplitude refuses an invalid field):
            // only it fails, with Amplitude's reason; the order and the first product arrive once.
            let ids = run.fake.events.compactMap { $0["insert_id"]?.stringValue }.filter { $0.hasPrefix("a-refused") }
            #expect(ids.sorted() == ["a-refused", "a-refused-2"], "\(ids)")
            #expect(run.stderr.contains("refused the event a-refused-3"), "\(run.stderr)")
            #expect(run.stderr.contains("Invalid field values on some events"), "Amplitude's reason: \(run.stderr)")
            #expect(run.row("Amplitude")?[4] == 1, "that call alone failed: \(run.stdout)")
        },
        MappingRow(name: "identify", events: [
            #"{"type":"identify","userId":"user-identify","messageId":"a-identify","traits":{"email":"zoe@example.com","plan":"pro"}}"#,
        ]) { run in
            let sent = events(run.fake, "a-identify")
            #expect(sent.map { $0["event_type"]?.stringValue } == ["$identify"])
            #expect(sent.first?["user_properties"] == ["$set": ["email": "zoe@example.com", "plan": "pro"]])
        },
        MappingRow(name: "group", events: [
            #"{"type":"group","userId":"user-group","groupId":"g-initech","messageId":"a-group","traits":{"name":"Initech"}}"#,
        ]) { run in
            let sent = events(run.fake, "a-group")
            #expect(sent.map { $0["event_type"]?.stringValue } == ["$identify", "$groupidentify"])
            #expect(sent.first?["groups"] == ["[Segment] Group": "g-initech"])
            #expect(sent.last?["group_properties"] == ["$set": ["name": "Initech"]])
        },
        MappingRow(name: "alias", events: [
            #"{"type":"alias","userId":"user-alias","previousId":"anon-alias","messageId":"a-alias"}"#,
        ]) { run in
            #expect(events(run.fake, "a-alias").isEmpty)
        },
        MappingRow(name: "no geolocation by the sender", events: [
            #"{"type":"track","event":"Located","userId":"user-ip","messageId":"a-ip-1","context":{"ip":"203.0.113.9"}}"#,
            #"{"type":"track","event":"Not Located","userId":"user-ip","messageId":"a-ip-2"}"#,
            #"{"type":"track","event":"Asks For The Sender","userId":"user-ip","messageId":"a-ip-3","context":{"ip":"$remote"}}"#,
        ]) { run in
            let sent = events(run.fake, "a-ip-")
            #expect(sent.map { $0["ip"]?.stringValue } == ["203.0.113.9", nil, nil])
            #expect(run.fake.locatedAtSender.isEmpty, "\(run.fake.locatedAtSender)")
        },
        MappingRow(name: "limits", events: [
            #"{"type":"track","event":"Huge","userId":"user-limits","messageId":"a-limits","properties":{"long":"\#(String(repeating: "é", count: 1500))","\#(String(repeating: "n", count: 1100))":1,\#(manyProperties)}}"#,
        ]) { run in
            let properties = events(run.fake, "a-limits").first?["event_properties"]?.objectValue
            #expect(properties?.count == 1024)
            #expect(properties?["long"]?.stringValue?.count == 1024, "cut at 1,024 characters, as Amplitude cuts")
            #expect(properties?[String(repeating: "n", count: 1100)] == nil)
            #expect(run.fake.overLimits.isEmpty, "\(run.fake.overLimits)")
            #expect(run.stderr.contains("the event a-limits was sent within Amplitude's limits: 977 properties past the first 1024 left out, 1 properties with a name longer than 1024 characters left out, 1 strings cut to 1024 characters"), "\(run.stderr)")
        },
    ]

    static func run(isolated: Bool) -> Result<MappingRun<AmplitudeFake>, any Error> {
        Result {
            let fake = try AmplitudeFake()
            fake.refuseEvents { $0["event_properties"]?["product_id"] == "p-refused" }
            let dir = makeTempDirectory("amplitude-table")
            defer { FixtureBuilder.remove(dir) }
            return try MappingRun.make(fake: fake, rows: rows, library: try AmplitudeBuild.library(in: dir), file: "libamplitude.so",
                                       integrations: #"{"Amplitude":{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"}}"#, isolated: isolated)
        }
    }

    static let inProcess = run(isolated: false)
    static let isolated = run(isolated: true)

    @Test(arguments: rows, [false, true])
    func segmentsBehaviourOrOurs(row: MappingRow<AmplitudeFake>, isolated: Bool) throws {
        let run = try (isolated ? Self.isolated : Self.inProcess).get()
        #expect(run.row("Amplitude")?[0] == Self.rows.flatMap(\.events).count, "\(run.stdout)\n\(run.stderr)")
        row.check(run)
    }
}
