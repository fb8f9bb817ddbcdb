import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct TimelineTests {
    @Test func pluginTypesRunInOrderAndInsertionOrderWithinAType() throws {
        let (analytics, _) = makeClient(["D"])
        let dest = RecordingDestination("D")
        // Added out of order on purpose: the type decides the stage, insertion order within it.
        let after = ProbePlugin(.after, "after")
        let enrich2 = ProbePlugin(.enrichment, "enrich2")
        let before = ProbePlugin(.before, "before")
        let enrich1 = ProbePlugin(.enrichment, "enrich1")
        let utility = ProbePlugin(.utility, "utility")
        for p in [after, enrich1, enrich2, before, utility] as [Plugin] { analytics.add(plugin: p) }
        analytics.add(plugin: dest)
        analytics.track("Ordered")
        #expect(analytics.flush())
        #expect(dest.events.map(\.trail) == [["before", "enrich1", "enrich2"]])
        #expect(after.seen.names == ["Ordered"])
        #expect(utility.seen.names.isEmpty, "utility plugins never see events")
    }

    @Test(arguments: [PluginType.before, .enrichment, .destination, .after])
    func nilDropsTheEventForEverythingLaterInThatTimeline(stage: PluginType) throws {
        let (analytics, _) = makeClient(["D"])
        let dest = RecordingDestination("D")
        let probes: [PluginType: ProbePlugin] = [
            .before: ProbePlugin(.before, "b", drop: stage == .before),
            .enrichment: ProbePlugin(.enrichment, "e", drop: stage == .enrichment),
            .after: ProbePlugin(.after, "a", drop: stage == .after),
        ]
        for p in probes.values { analytics.add(plugin: p) }
        let inner = ProbePlugin(.before, "inner", drop: stage == .destination)
        dest.add(plugin: inner)
        let innerAfter = ProbePlugin(.after, "innerAfter")
        dest.add(plugin: innerAfter)
        analytics.add(plugin: dest)
        analytics.track("E")
        #expect(analytics.flush())
        switch stage {
        case .before:
            #expect(probes[.enrichment]!.seen.names.isEmpty)
            #expect(dest.events.isEmpty)
            #expect(probes[.after]!.seen.names.isEmpty)
        case .enrichment:
            #expect(probes[.before]!.seen.names == ["E"])
            #expect(dest.events.isEmpty)
            #expect(probes[.after]!.seen.names.isEmpty)
        case .destination:
            // Dropped inside the destination's own timeline: the destination and its after
            // plugins miss it, the client's after plugins still see it.
            #expect(dest.events.isEmpty)
            #expect(innerAfter.seen.names.isEmpty)
            #expect(probes[.after]!.seen.names == ["E"])
            #expect(analytics.timeline.stats(forKey: "D")?.dropped == 1)
        default:
            #expect(dest.events.count == 1)
            #expect(probes[.after]!.seen.names == ["E"])
        }
    }

    @Test func destinationTimelinesAreIsolated() throws {
        let (analytics, _) = makeClient(["A", "B"])
        let a = RecordingDestination("A")
        let b = RecordingDestination("B")
        a.add(plugin: ProbePlugin(.enrichment, "onlyA"))
        let clientAfter = ProbePlugin(.after, "clientAfter")
        analytics.add(plugin: a)
        analytics.add(plugin: b)
        analytics.add(plugin: clientAfter)
        analytics.track("Iso")
        #expect(analytics.flush())
        #expect(a.events.first?.trail == ["onlyA"])
        #expect(b.events.first?.trail == [])
        #expect(clientAfter.seen.names == ["Iso"])
        // The after plugin's tag went on the client's copy only.
        #expect(b.events.first?.properties["trail"] == nil)
    }

    @Test func findRemoveAndUtilityPlugins() throws {
        let (analytics, _) = makeClient(["A"])
        let a = RecordingDestination("A")
        analytics.add(plugin: a)
        #expect(analytics.find(key: "A") === a)
        #expect(analytics.find(key: "Nope") == nil)
        analytics.remove(plugin: a)
        #expect(analytics.find(key: "A") == nil)
        #expect(a.recorded.shutdowns == 1, "a removed destination is shut down")
        analytics.track("After removal")
        #expect(analytics.flush())
        #expect(a.events.isEmpty)
    }

    @Test func updateReachesEveryPluginIncludingInsideDestinations() throws {
        let (analytics, _) = makeClient(["A"])
        let a = RecordingDestination("A")
        let inner = ProbePlugin(.enrichment, "inner")
        a.add(plugin: inner)
        let source = ProbePlugin(.before, "source")
        let utility = ProbePlugin(.utility, "utility")
        analytics.add(plugin: a)
        analytics.add(plugin: source)
        analytics.add(plugin: utility)
        analytics.update(settings: settings(enabling: ["A"], extra: ["x": 1]), type: .refresh)
        #expect(analytics.flush())
        #expect(a.recorded.settings.map(\.1) == [.initial, .refresh])
        #expect(a.recorded.settings.last?.0.json["x"] == 1)
        #expect(inner.seen.updates == [.initial, .refresh])
        #expect(source.seen.updates == [.initial, .refresh])
        #expect(utility.seen.updates == [.initial, .refresh])
    }

    @Test func resetAndFlushReachEveryPlugin() throws {
        let (analytics, _) = makeClient(["A"])
        let a = RecordingDestination("A")
        let inner = ProbePlugin(.enrichment, "inner")
        a.add(plugin: inner)
        let source = ProbePlugin(.enrichment, "source")
        analytics.add(plugin: a)
        analytics.add(plugin: source)
        analytics.reset()
        #expect(analytics.flush())
        #expect(a.recorded.resets == 1 && inner.seen.resets == 1 && source.seen.resets == 1)
        #expect(a.recorded.flushes == 1 && inner.seen.flushes == 1 && source.seen.flushes == 1)
    }

    @Test func onlyDestinationsInTheSettingsReceiveEvents() throws {
        let (analytics, _) = makeClient(["Listed"])
        let listed = RecordingDestination("Listed")
        let unlisted = RecordingDestination("Unlisted")
        analytics.add(plugin: listed)
        analytics.add(plugin: unlisted)
        analytics.track("E")
        #expect(analytics.flush())
        #expect(listed.events.count == 1)
        #expect(unlisted.events.isEmpty)
        #expect(analytics.timeline.stats(forKey: "Unlisted")?.skipped == 1)
        // A refresh that lists it turns it on.
        analytics.update(settings: settings(enabling: ["Listed", "Unlisted"]))
        analytics.track("E2")
        #expect(analytics.flush())
        #expect(unlisted.names == ["E2"])
    }

    /// The `integrations` option rule (docs/settings-and-filters.md), every branch, on a real client with three destinations.
    @Test(arguments: [
        (JSON.object([:]), [true, true, true]),
        (["A": false], [false, true, true]),
        (["All": false], [false, false, false]),
        (["All": false, "A": true], [true, false, false]),
        (["All": false, "B": ["option": 1]], [false, true, false]),
        (["all": false, "C": true], [false, false, true]),
        (["All": true, "B": false], [true, false, true]),
        (["A": "yes"], [true, true, true]),
        (["All": "no", "C": false], [true, true, false]),
    ] as [(JSON, [Bool])])
    func integrationsOptionMatrix(option: JSON, expected: [Bool]) throws {
        let (analytics, _) = makeClient(["A", "B", "C"])
        let dests = ["A", "B", "C"].map(RecordingDestination.init)
        for d in dests { analytics.add(plugin: d) }
        analytics.track("E", integrations: option.objectValue)
        #expect(analytics.flush())
        #expect(dests.map { !$0.events.isEmpty } == expected)
    }
}

@Suite struct TrackingPlanTests {
    @Test func planBlocksAndRoutesDeviceModeDestinationsButNeverSegment() throws {
        let plan: JSON = ["track": [
            "Blocked": ["enabled": false],
            "OnlyA": ["enabled": true, "integrations": ["All": false, "A": true]],
            "__default": ["enabled": false],
        ]]
        let (analytics, _) = makeClient(["A", "B", "Segment.io"])
        analytics.update(settings: settings(enabling: ["A", "B", "Segment.io"], extra: ["plan": plan]))
        let dests = ["A", "B", "Segment.io"].map(RecordingDestination.init)
        for d in dests { analytics.add(plugin: d) }
        analytics.track("Blocked")
        analytics.track("OnlyA")
        analytics.track("Unplanned")
        analytics.identify(userId: "u")  // the plan here covers track only
        #expect(analytics.flush())
        #expect(dests[0].names == ["OnlyA", "identify"])
        #expect(dests[1].names == ["identify"])
        #expect(dests[2].names == ["Blocked", "OnlyA", "Unplanned", "identify"])
    }
}

@Suite struct SegmentOptionTests {
    @Test func allFalseStillReachesSegmentButAnExplicitFalseDoesNot() {
        #expect(IntegrationsOption.isEnabled("Segment.io", in: ["All": false]))
        #expect(IntegrationsOption.isEnabled("Segment.io", in: ["All": false, "Segment.io": ["x": 1]]))
        #expect(!IntegrationsOption.isEnabled("Segment.io", in: ["Segment.io": false]))
        #expect(!IntegrationsOption.isEnabled("Amplitude", in: ["All": false]))
    }
}
