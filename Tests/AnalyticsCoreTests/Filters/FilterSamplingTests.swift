import Testing
@testable import AnalyticsCore

@Suite struct FilterSamplingTests {
    static func rules(percent: Double, path: String = "userId") -> RoutingRules {
        RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([["type": "sample_event", "config": ["sample": ["percent": .number(percent), "path": .string(path)]]]]),
        ]), random: { fatalError("a path-based sample must not use randomness") })
    }

    static func event(user: String) -> Event {
        try! Event(payload: ["type": "track", "event": "Viewed", "userId": .string(user), "properties": [:]])
    }

    static let ids = (0..<10_000).map { "user-\($0)" }

    static func keptIDs(percent: Double) -> Set<String> {
        let filter = rules(percent: percent).filter(forDestination: "Amplitude")
        return Set(ids.filter { filter.apply(event(user: $0)).event != nil })
    }

    @Test func theFunctionIsPinnedSoEveryMachineAgrees() {
        // Values computed independently from the documented definition (FNV-1a 64 + fmix64).
        #expect(ConsistentSampler.unitValue(of: "user-42") == 0.7172715322512179)
        #expect(ConsistentSampler.unitValue(of: "user-1") == 0.6228450377809968)
        #expect(ConsistentSampler.unitValue(of: "42") == 0.984202778233683)
        #expect(ConsistentSampler.unitValue(of: 42) == 0.504075611554918)
        #expect(ConsistentSampler.keeps("user-42", percent: 0.72))
        #expect(!ConsistentSampler.keeps("user-42", percent: 0.71))
    }

    @Test func sameValueSameDecisionAcrossSeparatelyBuiltRuleSets() {
        let a = Self.rules(percent: 0.5).filter(forDestination: "Amplitude")
        let b = Self.rules(percent: 0.5).filter(forDestination: "Amplitude")
        var kept = 0
        for id in Self.ids.prefix(2_000) {
            let first = a.apply(Self.event(user: id)).event != nil
            #expect(first == (b.apply(Self.event(user: id)).event != nil))
            #expect(first == (a.apply(Self.event(user: id)).event != nil))
            if first { kept += 1 }
        }
        #expect(kept > 0 && kept < 2_000)
    }

    @Test func largerPercentKeepsASupersetAndFractionsConverge() {
        var previous: Set<String> = []
        for percent in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
            let kept = Self.keptIDs(percent: percent)
            #expect(previous.isSubset(of: kept), "percent \(percent)")
            let fraction = Double(kept.count) / Double(Self.ids.count)
            #expect(abs(fraction - percent) < 0.02, "percent \(percent) kept \(fraction)")
            previous = kept
        }
    }

    @Test func valueTypeMattersAndNestedPathsWork() throws {
        let filter = Self.rules(percent: 0.9, path: "context.traits.id").filter(forDestination: "X")
        // "42" and 42 hash differently: 0.984 (out) vs 0.504 (in).
        let asString = try Event(payload: ["type": "track", "event": "e", "context": ["traits": ["id": "42"]]])
        let asNumber = try Event(payload: ["type": "track", "event": "e", "context": ["traits": ["id": 42]]])
        #expect(filter.apply(asString).event == nil)
        #expect(filter.apply(asNumber).event != nil)
    }

    /// A path the event lacks: the missing value is hashed too (as nothing), so every such event gets
    /// the same answer, run after run; randomness is never used (the rule set's source traps).
    @Test func aMissingValueIsDecidedDeterministically() throws {
        // The empty text's position, pinned: FNV-1a 64 offset basis through fmix64.
        let missing = ConsistentSampler.unitValue(of: nil)
        #expect(missing == ConsistentSampler.unitValue(ofUTF8: []))
        #expect(missing == 0.93676944839044)  // computed independently from the definition
        for percent in [0.25, 0.5, 0.93, 0.94, 0.99] {
            let filter = Self.rules(percent: percent).filter(forDestination: "A")
            for i in 0..<50 {
                let anonymous = try Event(payload: ["type": "track", "event": "e", "anonymousId": .string("a-\(i)")])
                #expect((filter.apply(anonymous).event != nil) == (missing < percent), "percent \(percent)")
            }
        }
    }

    @Test func numbersAreHashedByValue() {
        #expect(ConsistentSampler.unitValue(of: try! JSON(parsing: "1.50")) == ConsistentSampler.unitValue(of: 1.5))
        #expect(ConsistentSampler.unitValue(of: try! JSON(parsing: "-0")) == ConsistentSampler.unitValue(of: 0))
    }
}
