@testable import AnalyticsCore

/// Builders shared by the destination-filter tests: real settings objects and real events,
/// compiled and applied through the public API.
enum FilterFixture {
    static let eventText = #"""
    {"type":"track","event":"Order Completed","userId":"u1","messageId":"m1",
     "properties":{"price":10,"priceText":"10","currency":"USD","email":"a@b.c","tags":["a","b"],
       "products":[{"sku":"s1","price":3,"name":"A"},{"sku":"s2","price":4},"loose"],
       "nothing":null,"flag":true,"obj":{"a":1,"b":2},"name":"Ünïcode","emoji":"😀é","empty":""},
     "context":{"app":{"version":"1.2.3"},"library":{"name":"analytics-host","version":"0.1"},"ip":"10.0.0.1"}}
    """#

    static func event(_ text: String = eventText) throws -> Event {
        try Event(payload: try JSON(parsing: text).objectValue!)
    }

    static func settings(rules: [JSON]) -> JSONObject {
        ["middlewareSettings": ["routingRules": .array(rules)]]
    }

    static func settings(_ text: String) throws -> JSONObject {
        try JSON(parsing: text).objectValue!
    }

    /// A global rule: one fql matcher with `ir`, paired with `transformers`.
    static func rule(ir: String, transformers: [JSON] = [["type": "drop"]], destination: String? = nil) -> JSON {
        var r: JSONObject = [
            "matchers": [["type": "fql", "ir": .string(ir)]],
            "transformers": [.array(transformers)],
        ]
        if let destination { r["destinationName"] = .string(destination) }
        return .object(r)
    }

    /// A rule whose single matcher is `all`.
    static func always(_ transformers: [JSON], destination: String? = nil) -> JSON {
        var r: JSONObject = ["matchers": [["type": "all"]], "transformers": [.array(transformers)]]
        if let destination { r["destinationName"] = .string(destination) }
        return .object(r)
    }

    /// Whether `ir` matches the event: the rule drops on a match.
    static func matches(_ ir: String, _ event: Event) -> (matched: Bool, problems: [RoutingRuleProblem]) {
        let rules = RoutingRules(settings: settings(rules: [rule(ir: ir)]))
        let outcome = rules.filter(forDestination: "Amplitude").apply(event)
        if case .dropped = outcome { return (true, rules.problems) }
        return (false, rules.problems)
    }

    /// Applies one global rule with an `all` matcher and returns the resulting payload (nil = dropped).
    static func transform(_ transformers: [JSON], _ event: Event, random: @escaping @Sendable () -> Double = { 0.5 }) -> JSON? {
        let rules = RoutingRules(settings: settings(rules: [always(transformers)]), random: random)
        precondition(rules.problems.isEmpty, "\(rules.problems)")
        return rules.filter(forDestination: "Amplitude").apply(event).event.map { JSON.object($0.payload) }
    }
}
