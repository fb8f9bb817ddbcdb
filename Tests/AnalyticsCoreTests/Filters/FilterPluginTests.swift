import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct FilterPluginTests {
    static func rulesSettings(_ keys: [String], rules: [JSON]) -> Settings {
        settings(enabling: keys, extra: ["middlewareSettings": ["routingRules": .array(rules)]])
    }

    static let dropEmailForAmplitude = FilterFixture.always(
        [["type": "drop_properties", "config": ["drop": ["properties": ["email"]]]]], destination: "Amplitude")
    static let dropDebugEverywhere = FilterFixture.rule(ir: #"["match","event",{"value":"Debug *"}]"#)

    @Test func filtersLiveInEachDestinationsTimelineAndFollowSettingsUpdates() throws {
        let (analytics, errors) = makeClient(["Amplitude", "Mixpanel"])
        let amplitude = RecordingDestination("Amplitude")
        let mixpanel = RecordingDestination("Mixpanel")
        analytics.add(plugin: amplitude)
        analytics.add(plugin: mixpanel)
        // The client gave each destination its filter plugin.
        let amplitudeFilter = try #require(amplitude.timeline.plugins(of: .before).first as? DestinationFilterPlugin)
        #expect(amplitudeFilter.destinationKey == "Amplitude")

        // No rules yet: everything passes.
        analytics.track("Order Completed", properties: ["email": "a@b.c", "total": 5])
        #expect(analytics.flush())
        #expect(amplitude.events.last?.properties["email"] == "a@b.c")

        analytics.update(settings: Self.rulesSettings(["Amplitude", "Mixpanel"], rules: [Self.dropEmailForAmplitude, Self.dropDebugEverywhere]))
        analytics.track("Order Completed", properties: ["email": "a@b.c", "total": 6])
        analytics.track("Debug ping")
        #expect(analytics.flush())
        #expect(amplitude.names == ["Order Completed", "Order Completed"])
        #expect(mixpanel.names == ["Order Completed", "Order Completed"])
        #expect(amplitude.events.last?.properties["email"] == nil)
        #expect(amplitude.events.last?.properties["total"] == 6)
        #expect(mixpanel.events.last?.properties["email"] == "a@b.c")
        #expect(analytics.timeline.stats(forKey: "Amplitude")?.dropped == 1)
        #expect(amplitudeFilter.problems.isEmpty)
        #expect(errors.all.isEmpty, "\(errors.messages)")

        // A broken rule for Amplitude: Amplitude fails closed, Mixpanel carries on, one report.
        let broken = FilterFixture.rule(ir: #"["~","event",{"value":"x"}]"#, destination: "Amplitude")
        let brokenSettings = Self.rulesSettings(["Amplitude", "Mixpanel"], rules: [Self.dropDebugEverywhere, broken])
        analytics.update(settings: brokenSettings)
        analytics.track("Order Completed", properties: ["email": "a@b.c"])
        analytics.update(settings: brokenSettings)  // the same problem again is not reported again
        analytics.track("Order Completed", properties: ["email": "a@b.c"])
        #expect(analytics.flush())
        #expect(amplitude.events.count == 2)
        #expect(mixpanel.events.count == 4)
        #expect(amplitudeFilter.problems.map(\.path) == ["middlewareSettings.routingRules[1].matchers[0].ir"])
        let reports = errors.messages.filter { $0.contains("Amplitude") }
        #expect(reports.count == 1, "\(errors.messages)")
        #expect(reports.first?.contains("filter rule 1 is invalid: middlewareSettings.routingRules[1].matchers[0].ir") == true)
        #expect(!errors.messages.contains { $0.contains("Mixpanel") })

        // Fixed settings restore delivery.
        analytics.update(settings: Self.rulesSettings(["Amplitude", "Mixpanel"], rules: []))
        analytics.track("Order Completed", properties: ["email": "a@b.c"])
        #expect(analytics.flush())
        #expect(amplitude.events.count == 3)
        #expect(amplitude.events.last?.properties["email"] == "a@b.c")
        #expect(analytics.shutdown())
    }

    /// Each rule set writes the same marker into two properties; a half-swapped filter would
    /// produce an event whose two markers differ.
    static func markers(_ n: Int) -> Settings {
        rulesSettings(["D"], rules: [
            FilterFixture.always([["type": "map_properties", "config": ["map": ["properties.a": ["set": .number(Double(n))]]]]]),
            FilterFixture.always([["type": "map_properties", "config": ["map": ["properties.b": ["set": .number(Double(n))]]]]]),
        ])
    }

    @Test func swapIsAtomicWhileEventsFlow() throws {
        let plugin = DestinationFilterPlugin(destinationKey: "D")
        plugin.update(settings: Self.markers(0), type: .initial)
        let event = try Event(payload: ["type": "track", "event": "E", "properties": [:]])
        let updates = 2_000
        let done = Locked(false)
        let updater = Thread {
            for i in 1...updates { plugin.update(settings: Self.markers(i), type: .refresh) }
            done.withLock { $0 = true }
        }
        updater.start()
        var seen = Set<Double>()
        var checked = 0
        while !done.withLock({ $0 }) || checked == 0 {
            let out = try #require(plugin.execute(event))
            let a = out.properties["a"]?.doubleValue
            #expect(a != nil && a == out.properties["b"]?.doubleValue)
            if let a { seen.insert(a) }
            checked += 1
        }
        #expect(plugin.execute(event)?.properties["a"] == .number(Double(updates)))
        #expect(checked > 0 && seen.count >= 1)
    }
}

@Suite struct FilterWiringTests {
    @Test func globalRulesSkipSegmentIOAndApplyToEveryOtherDestination() throws {
        let dropAll = FilterFixture.rule(ir: #"["=","type",{"value":"track"}]"#)
        let (analytics, _) = makeClient(["A", "Segment.io"])
        analytics.update(settings: FilterPluginTests.rulesSettings(["A", "Segment.io"], rules: [dropAll]))
        let a = RecordingDestination("A"), segment = RecordingDestination("Segment.io")
        analytics.add(plugin: a)
        analytics.add(plugin: segment)
        analytics.track("Anything")
        #expect(analytics.flush())
        #expect(a.events.isEmpty)
        #expect(segment.names == ["Anything"])
        #expect(!segment.timeline.plugins(of: .before).contains { $0 is DestinationFilterPlugin })
    }
}
