import Testing
@testable import AnalyticsCore

@Suite struct FilterTransformerTests {
    let event: Event
    init() throws { event = try FilterFixture.event() }

    @Test func dropEndsEvaluationForThatDestination() {
        #expect(FilterFixture.transform([["type": "drop"], ["type": "map_properties", "config": ["map": ["x": ["set": 1]]]]], event) == nil)
    }

    @Test func dropPropertiesAtPathTopLevelAndInArrays() throws {
        let out = try #require(FilterFixture.transform([
            ["type": "drop_properties", "config": ["drop": [
                "properties": ["email", "absent"],
                "": ["userId"],
                "properties.products": ["price"],
                "context.app": ["version"],
                "properties.nothing": ["x"],
                "properties.missing": ["x"],
            ]]],
        ], event))
        #expect(out["properties"]?["email"] == nil)
        #expect(out["properties"]?["currency"] == "USD")
        #expect(out["userId"] == nil)
        #expect(out["anonymousId"] == nil && out["messageId"] == "m1")
        #expect(out[path: "properties.products"] == [["sku": "s1", "name": "A"], ["sku": "s2"], "loose"])
        #expect(out[path: "context.app"] == .object([:]))
        #expect(out[path: "context.library.name"] == "analytics-host")
        // Keys keep their order.
        #expect(out["properties"]?.objectValue?.keys.first == "price")
    }

    @Test func allowPropertiesKeepsOnlyListedKeys() throws {
        let out = try #require(FilterFixture.transform([
            ["type": "allow_properties", "config": ["allow": [
                "properties": ["price", "products", "currency"],
                "properties.products": ["sku"],
                "context": ["library"],
            ]]],
        ], event))
        #expect(out["properties"]?.objectValue?.keys == ["price", "currency", "products"])
        #expect(out[path: "properties.products"] == [["sku": "s1"], ["sku": "s2"], "loose"])
        #expect(out["context"]?.objectValue?.keys == ["library"])
        #expect(out["event"] == "Order Completed")
    }

    @Test func allowAtTopLevelCanRemoveTheTypeWhichDropsTheEvent() {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([["type": "allow_properties", "config": ["allow": ["": ["event", "properties"]]]]]),
        ]))
        guard case .dropped(let reason) = rules.filter(forDestination: "A").apply(event) else {
            Issue.record("an event without a type must not be passed on")
            return
        }
        #expect(reason.contains("type"))
    }

    @Test func mapCopyMoveSetAndToString() throws {
        let out = try #require(FilterFixture.transform([
            ["type": "map_properties", "config": ["map": [
                "properties.revenue": ["copy": "properties.price"],
                "properties.mail": ["move": "properties.email"],
                "properties.source": ["set": "server"],
                "properties.zero": ["set": 0],
                "properties.no": ["set": false],
                "properties.nil": ["set": nil],
                "properties.price": ["to_string": true],
                "properties.flag": ["to_string": true],
                "properties.currency": ["to_string": true],
                "properties.obj": ["to_string": true],
                "properties.copiedNothing": ["copy": "properties.missing"],
                "properties.tags.1": ["set": "z"],
                "properties.obj.c": ["copy": "context.app"],
                "properties.absent.x": ["set": 1],
                "context.ipText": ["copy": "context.ip", "to_string": true],
            ]]],
        ], event))
        let p = try #require(out["properties"]?.objectValue)
        #expect(p["revenue"] == 10)
        #expect(p["mail"] == "a@b.c")
        #expect(p["email"] == nil)
        #expect(p["source"] == "server")
        #expect(p["zero"] == 0)
        #expect(p["no"] == false)
        #expect(p["nil"] == .null)
        #expect(p["price"] == "10")
        #expect(p["flag"] == "true")
        #expect(p["currency"] == "USD")
        #expect(p["copiedNothing"] == nil)
        #expect(p["tags"] == ["a", "z"])
        #expect(p["obj"] == ["a": 1, "b": 2, "c": ["version": "1.2.3"]])
        #expect(p["absent"] == nil)  // a target whose parent does not exist is not created
        #expect(out[path: "context.ipText"] == "10.0.0.1")
    }

    @Test func mapReadsFromASnapshotTakenBeforeTheTransformer() throws {
        let out = try #require(FilterFixture.transform([
            ["type": "map_properties", "config": ["map": [
                "properties.price": ["copy": "properties.priceText"],
                "properties.priceText": ["copy": "properties.price"],
            ]]],
        ], event))
        #expect(out[path: "properties.price"] == "10")
        #expect(out[path: "properties.priceText"] == 10)
        // ...but a second transformer sees the first one's result.
        let chained = try #require(FilterFixture.transform([
            ["type": "map_properties", "config": ["map": ["properties.a": ["set": 1]]]],
            ["type": "map_properties", "config": ["map": ["properties.b": ["copy": "properties.a"]]]],
        ], event))
        #expect(chained[path: "properties.b"] == 1)
    }

    /// JavaScript's String(n): shortest round-trip digits, plain for 1e-6 ≤ |n| < 1e21.
    @Test(arguments: [
        ("1.5", "1.5"), ("-0.0", "0"), ("100", "100"), ("1e-7", "1e-7"), ("0.00001", "0.00001"),
        ("0.000001", "0.000001"), ("1.5e-7", "1.5e-7"), ("-1.5e-7", "-1.5e-7"), ("9.5e18", "9500000000000000000"),
        ("1e21", "1e+21"), ("1.5e21", "1.5e+21"), ("999999999999999900000", "999999999999999900000"),
        ("123.456", "123.456"), ("0.1", "0.1"), ("12345678901234567890", "12345678901234567000"),
        ("5e-324", "5e-324"), ("1.7976931348623157e308", "1.7976931348623157e+308"), ("1.50", "1.5"),
        ("-42", "-42"), ("2.5e-6", "0.0000025"), ("123e-20", "1.23e-18"), ("0.30000000000000004", "0.30000000000000004"),
    ])
    func toStringFormatsNumbersLikeJavaScript(_ number: String, _ text: String) throws {
        let e = try FilterFixture.event(#"{"type":"track","event":"e","properties":{"n":\#(number),"d":1e-7}}"#)
        let out = try #require(FilterFixture.transform([
            ["type": "map_properties", "config": ["map": ["properties.n": ["to_string": true]]]],
        ], e))
        #expect(out[path: "properties.n"] == .string(text), "String(\(number))")
        #expect(out[path: "properties.d"] == 1e-7, "untouched")
    }

    @Test func mapBelowAnArrayLeavesTheArrayAsItWas() throws {
        let e = try FilterFixture.event(#"{"type":"track","event":"e","properties":{"tags":["a",{"k":1}],"n":1}}"#)
        let out = try #require(FilterFixture.transform([
            ["type": "map_properties", "config": ["map": [
                "properties.tags.k": ["set": "x"],
                "properties.tags.k.deeper": ["set": "y"],
                "properties.tags.first": ["copy": "properties.n"],
                "properties.tags.1.k": ["set": 2],
            ]]],
        ], e))
        #expect(out[path: "properties.tags"]?.serialized() == #"["a",{"k":2}]"#)
    }

    @Test func hashPropertiesIsANoOpAndUnchangedEventsAreReturnedAsIs() throws {
        let out = try #require(FilterFixture.transform([
            ["type": "hash_properties", "config": ["hash": ["properties": ["email"]]]],
            ["type": "drop_properties", "config": ["drop": ["properties": ["notThere"]]]],
        ], event))
        #expect(out.serialized() == event.payload.serialized())
    }

    @Test func sampleEventPercentBoundsAndInjectedRandom() throws {
        func sample(_ percent: Double, random: Double) -> Bool {
            FilterFixture.transform([["type": "sample_event", "config": ["sample": ["percent": .number(percent)]]]],
                                    event, random: { random }) != nil
        }
        #expect(!sample(0, random: 0))
        #expect(!sample(-1, random: 0))
        #expect(sample(1, random: 0.999))
        #expect(sample(1.5, random: 0.999))
        #expect(sample(0.5, random: 0.3))
        #expect(!sample(0.5, random: 0.7))
        #expect(!sample(0.3, random: 0.3))
    }

    @Test func transformedEventKeepsTypedAccessorsInStep() throws {
        let e = try FilterFixture.event(#"{"type":"track","event":"e","properties":{}}"#)
        let out = FilterFixture.transform([["type": "map_properties", "config": ["map": ["type": ["set": "screen"], "name": ["set": "Home"]]]]], e)
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [
            FilterFixture.always([["type": "map_properties", "config": ["map": ["type": ["set": "screen"]]]]]),
        ]))
        let kept = try #require(rules.filter(forDestination: "A").apply(e).event)
        #expect(kept.type == .screen)
        #expect(out?["name"] == "Home")
    }
}
