import Foundation
import Testing
@testable import AnalyticsCore

/// Plugins/Redact/redact.c, built from source with `make plugins`'s flags: a before-plugin that
/// masks configured paths in every event, configured by `integrations.Redact`.
@Suite struct RedactExampleTests {
    static let redact = ExtensionClient.Library(name: "redact", source: "Plugins/Redact/redact.c")

    func client(_ redact: JSON?, recorder: RecordingDestination) throws -> ExtensionClient {
        var integrations: JSONObject = ["Rec": [:]]
        if let redact { integrations["Redact"] = redact }
        return try ExtensionClient(libraries: [Self.redact], settings: ["integrations": .object(integrations)], recorders: [recorder])
    }

    @Test func configuredPathsAreMaskedWhateverTheirValueAndTheRestPassesExactly() throws {
        let rec = RecordingDestination("Rec")
        let c = try client(["paths": ["properties.email", "properties.address", "traits.phone", "context.ip", "properties.none.deeper"]],
                           recorder: rec)
        c.analytics.track("Order Completed", properties: [
            "note": "an \"email\": \"x\" inside a string", "email": "ann@example.com",
            "address": ["street": "1 Main St", "zip": 12345], "total": 42.5, "items": [["sku": "a"], ["sku": "b"]],
        ])
        c.analytics.identify(userId: "u-1", traits: ["phone": "+1 555 0100", "name": "Ann"])
        c.analytics.track("Page Viewed", properties: ["path": "/home"])
        _ = try c.analytics.process(payload: ["type": "screen", "name": "Home", "context": ["ip": "10.1.2.3", "locale": "en"]])
        #expect(c.analytics.flush())
        let events = rec.events
        #expect(events.count == 4)
        #expect(events[0].properties == [
            "note": "an \"email\": \"x\" inside a string", "email": "[REDACTED]", "address": "[REDACTED]",
            "total": 42.5, "items": [["sku": "a"], ["sku": "b"]],
        ])
        #expect(events[1].traits == ["phone": "[REDACTED]", "name": "Ann"])
        #expect(events[1].userId == "u-1")
        #expect(events[2].properties == ["path": "/home"])
        #expect(events[3].context["ip"] == "[REDACTED]")
        #expect(events[3].context["locale"] == "en")
        #expect(Set(events.compactMap(\.messageId)).count == 4)
        #expect(c.errors.messages.isEmpty)
        let plugin = try #require(c.analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first)
        #expect(plugin.name == "Redact" && plugin.threadSafe)
        #expect(c.analytics.shutdown())
    }

    @Test func aRefreshChangesWhatIsMaskedAndWithWhat() throws {
        let rec = RecordingDestination("Rec")
        let c = try client(["paths": ["properties.email"]], recorder: rec)
        c.analytics.track("A", properties: ["email": "a@b.c", "phone": "1"])
        c.analytics.update(settings: Settings(["integrations": ["Rec": [:], "Redact": ["paths": ["properties.phone"], "mask": "***"]]]))
        c.analytics.track("B", properties: ["email": "a@b.c", "phone": "1"])
        #expect(c.analytics.flush())
        #expect(rec.events.map(\.properties) == [["email": "[REDACTED]", "phone": "1"], ["email": "a@b.c", "phone": "***"]])
        #expect(c.analytics.shutdown())
    }

    @Test func withoutConfigurationNothingIsMaskedAndFalseSwitchesItOff() throws {
        let rec = RecordingDestination("Rec")
        let c = try client(nil, recorder: rec)
        #expect(c.analytics.timeline.plugins(of: .utility).contains { ($0 as? NativeUtilityLibrary)?.key == "Redact" })
        c.analytics.track("A", properties: ["email": "a@b.c"])
        #expect(c.analytics.flush())
        #expect(rec.events.first?.properties == ["email": "a@b.c"])
        #expect(c.analytics.shutdown())

        let off = try client(false, recorder: RecordingDestination("Rec"))
        #expect(!off.analytics.timeline.plugins(of: .utility).contains { $0 is NativeUtilityLibrary })
        #expect(off.analytics.shutdown())
    }

    @Test func unusableConfigurationIsReportedAndIgnored() throws {
        // At start-up the host checks Redact's settings against what it declares
        // (AH_EXT_SETTINGS_SCHEMA): of the wrong types, it is not created, and says why.
        let refused = try client(["paths": "properties.email", "mask": 3], recorder: RecordingDestination("Rec"))
        #expect(!refused.analytics.timeline.plugins(of: .utility).contains { $0 is NativeUtilityLibrary })
        let reason = refused.analytics.libraryProblems.notCreated.first { $0.key == "Redact" }?.reason ?? ""
        #expect(reason.contains("integrations.Redact.paths: expected an array, found a string")
                && reason.contains("integrations.Redact.mask: expected a string, found a number"), "\(reason)")
        #expect(refused.analytics.shutdown())

        // A refresh reaches the library itself, which reports what it cannot use and masks nothing.
        let rec = RecordingDestination("Rec")
        let c = try client(["paths": ["properties.email"]], recorder: rec)
        c.analytics.update(settings: Settings(["integrations": ["Redact": ["paths": "properties.email", "mask": 3], "Rec": [:]]]), type: .refresh)
        c.analytics.track("A", properties: ["email": "a@b.c"])
        #expect(c.analytics.flush())
        #expect(rec.events.first?.properties == ["email": "a@b.c"])
        #expect(c.lines(of: "Redact").contains("\"paths\" must be an array of strings; nothing is masked"))
        #expect(c.lines(of: "Redact").filter { $0 == "\"mask\" must be a string" }.count == 1, "said once, not once per reading")
        #expect(c.analytics.shutdown())
    }
}
