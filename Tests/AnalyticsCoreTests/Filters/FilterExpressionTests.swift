import Testing
@testable import AnalyticsCore

@Suite struct FilterExpressionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let ir: String
        let expected: Bool
        init(_ ir: String, _ expected: Bool) { self.ir = ir; self.expected = expected }
        var testDescription: String { "\(ir) → \(expected)" }
    }

    static let equality: [Case] = [
        Case(#"["=","event",{"value":"Order Completed"}]"#, true),
        Case(#"["=","event",{"value":"Order completed"}]"#, false),
        Case(#"["=","properties.price",{"value":"10"}]"#, false),  // 1 ≠ "1"
        Case(#"["=","properties.priceText",{"value":10}]"#, false),
        Case(#"["=","properties.price",{"value":10.0}]"#, true),  // 1 = 1.0
        Case(#"["=","properties.price",{"value":1e1}]"#, true),
        Case(#"["=","properties.missing","properties.alsoMissing"]"#, true),  // undefined = undefined
        Case(#"["=","properties.nothing","properties.missing"]"#, false),  // null ≠ undefined
        Case(#"["=","properties.nothing",{"value":null}]"#, true),
        Case(#"["=","properties.nothing",{"value":{}}]"#, false),
        Case(#"["=","properties.nothing",{"value":"null"}]"#, false),
        Case(#"["=","properties.obj",{"value":{"a":1,"b":2}}]"#, true),
        Case(#"["=","properties.obj",{"value":{"b":2,"a":1}}]"#, false),  // key order matters
        Case(#"["!=","properties.obj",{"value":{"b":2,"a":1}}]"#, true),
        Case(#"["=","properties.obj",{"value":{"a":1.0,"b":2}}]"#, true),
        Case(#"["=","properties.tags",{"value":["a","b"]}]"#, true),
        Case(#"["=","properties.tags",{"value":["b","a"]}]"#, false),
        Case(#"["=","properties.tags",{"value":"a,b"}]"#, false),
        Case(#"["=","properties.flag",{"value":true}]"#, true),
        Case(#"["=","properties.flag",{"value":1}]"#, false),
        Case(#"["=","properties.empty",{"value":false}]"#, false),
        Case(#"["!=","event",{"value":"x"}]"#, true),
        Case(#"["!=","properties.missing","properties.missing2"]"#, false),
        Case(#"["!=","properties.price",{"value":"10"}]"#, true),
        // Exact characters: a precomposed Ü is not U + combining diaeresis.
        Case(#"["=","properties.name",{"value":"\u00dcn\u00efcode"}]"#, true),
        Case(#"["=","properties.name",{"value":"U\u0308n\u00efcode"}]"#, false),
        // Array paths: numeric segments index arrays; missing steps are undefined.
        Case(#"["=","properties.products.1.sku",{"value":"s2"}]"#, true),
        Case(#"["=","properties.products.0.price",{"value":3}]"#, true),
        Case(#"["=","properties.products.3.sku","properties.missing"]"#, true),
        Case(#"["=","properties.products.01.sku","properties.missing"]"#, true),
        Case(#"["=","properties.products.2",{"value":"loose"}]"#, true),
        Case(#"["=","properties.products.2.sku","properties.missing"]"#, true),
        Case(#"["=","context.app.version",{"value":"1.2.3"}]"#, true),
        Case(#"["=","type",{"value":"track"}]"#, true),
    ]

    static let ordering: [Case] = [
        Case(#"["<","properties.price",{"value":11}]"#, true),
        Case(#"["<","properties.price",{"value":10}]"#, false),
        Case(#"["<=","properties.price",{"value":10}]"#, true),
        Case(#"[">","properties.price",{"value":10}]"#, false),
        Case(#"[">","properties.price",{"value":9.5}]"#, true),
        Case(#"[">=","properties.price",{"value":10}]"#, true),
        Case(#"[">=","properties.price",{"value":10.01}]"#, false),
        Case(#"[">","properties.products.1.price","properties.products.0.price"]"#, true),
        Case(#"["<","properties.priceText",{"value":11}]"#, false),  // numbers only
        Case(#"["<","properties.price",{"value":"11"}]"#, false),
        Case(#"["<","properties.missing",{"value":1}]"#, false),
        Case(#"[">=","properties.nothing",{"value":0}]"#, false),  // null is not 0 here
        Case(#"["<=","properties.flag",{"value":1}]"#, false),
    ]

    static let logic: [Case] = [
        Case(#"["!",["=","event",{"value":"x"}]]"#, true),
        Case(#"["!",["=","event",{"value":"Order Completed"}]]"#, false),
        Case(#"["!","properties.flag"]"#, false),
        Case(#"["!","properties.price"]"#, true),  // a bare path counts only when it is true
        Case(#"["!","properties.missing"]"#, true),
        Case(#"["and",["=","event",{"value":"Order Completed"}],[">","properties.price",{"value":5}]]"#, true),
        Case(#"["and",["=","event",{"value":"Order Completed"}],[">","properties.price",{"value":50}]]"#, false),
        Case(#"["and",["=","event",{"value":"Order Completed"}],"properties.flag",["!","properties.missing"]]"#, true),
        Case(#"["or",["=","event",{"value":"x"}],[">","properties.price",{"value":5}]]"#, true),
        Case(#"["or",["=","event",{"value":"x"}],["=","event",{"value":"y"}]]"#, false),
        Case(#"["and"]"#, true),
        Case(#"["or"]"#, false),
        Case(#"["or",["and",["=","type",{"value":"track"}],["!",["=","userId",{"value":"u2"}]]],["=","event",{"value":"x"}]]"#, true),
        // function results follow JavaScript truthiness inside logic
        Case(#"["and",["lowercase","event"]]"#, true),
        Case(#"["and",["lowercase","properties.empty"]]"#, false),
        Case(#"["!",["length","properties.nothing"]]"#, true),
        Case(#"["!",["length","properties.price"]]"#, true),  // NaN is falsy
    ]

    static let membership: [Case] = [
        Case(#"["in","event",{"value":[{"value":"A"},{"value":"Order Completed"}]}]"#, true),
        Case(#"["in","event",{"value":[{"value":"A"},{"value":"B"}]}]"#, false),
        Case(#"["in",{"value":"USD"},{"value":["properties.currency"]}]"#, true),  // bare item is a path
        Case(#"["in",{"value":"properties.currency"},{"value":["properties.currency"]}]"#, false),
        Case(#"["in","properties.price",{"value":[{"value":"10"}]}]"#, false),  // strict
        Case(#"["in","properties.price",{"value":[{"value":"10"},{"value":10}]}]"#, true),
        Case(#"["in","event",{"value":[]}]"#, false),
        Case(#"["in","properties.missing",{"value":["properties.alsoMissing"]}]"#, true),
        Case(#"["in",["lowercase","event"],{"value":[{"value":"order completed"}]}]"#, true),
        Case(#"["contains","properties.email",{"value":"@b."}]"#, true),
        Case(#"["contains","properties.email",{"value":"@B."}]"#, false),
        Case(#"["contains","event",{"value":""}]"#, true),
        Case(#"["contains","properties.price",{"value":"1"}]"#, false),  // strings only
        Case(#"["contains","properties.tags",{"value":"a"}]"#, false),
        Case(#"["contains","properties.name",{"value":"nïc"}]"#, true),
        Case(#"["contains","properties.emoji",{"value":"😀"}]"#, true),
        Case(#"["contains",{"value":"ab"},{"value":"abc"}]"#, false),
        Case(#"["match","event",{"value":"Order *"}]"#, true),
        Case(#"["match","event",{"value":"order *"}]"#, false),
        Case(#"["match","event",{"value":"Order ?ompleted"}]"#, true),
        Case(#"["match","properties.price",{"value":"*"}]"#, false),  // strings only
        Case(#"["match","event",{"value":5}]"#, false),
        Case(#"["match","event",{"value":"[Order"}]"#, false),  // malformed → false
        Case(#"["!",["match","event",{"value":"[Order"}]]"#, true),
        Case(#"["match","event","properties.pattern"]"#, false),  // missing glob
        Case(#"["match","properties.currency","properties.currency"]"#, true),  // glob from the event
        Case(#"["match",["lowercase","event"],{"value":"order *"}]"#, true),
    ]

    static let functions: [Case] = [
        Case(#"["=",["lowercase","event"],{"value":"order completed"}]"#, true),
        Case(#"["=",["lowercase","properties.name"],{"value":"ünïcode"}]"#, true),
        Case(#"["=",["lowercase","properties.price"],{"value":null}]"#, true),  // non-string → null
        Case(#"["=",["lowercase","properties.missing"],{"value":null}]"#, true),
        Case(#"["=",["length","properties.tags"],{"value":2}]"#, true),
        Case(#"["=",["length","event"],{"value":15}]"#, true),
        Case(#"["=",["length","properties.emoji"],{"value":3}]"#, true),  // UTF-16 units
        Case(#"["=",["length","properties.nothing"],{"value":0}]"#, true),
        Case(#"["=",["length","properties.missing"],{"value":0}]"#, false),
        Case(#"["=",["length","properties.price"],["length","properties.price"]]"#, false),  // NaN
        Case(#"["!=",["length","properties.price"],["length","properties.price"]]"#, true),
        Case(#"["<",["length","properties.obj"],{"value":100}]"#, false),
        Case(#"[">=",["length","properties.flag"],{"value":0}]"#, false),
        Case(#"[">",["length","properties.products"],{"value":2}]"#, true),
        Case(#"["=",["typeof","event"],{"value":"string"}]"#, true),
        Case(#"["=",["typeof","properties.price"],{"value":"number"}]"#, true),
        Case(#"["=",["typeof","properties.flag"],{"value":"boolean"}]"#, true),
        Case(#"["=",["typeof","properties.nothing"],{"value":"object"}]"#, true),
        Case(#"["=",["typeof","properties.tags"],{"value":"object"}]"#, true),
        Case(#"["=",["typeof","properties.obj"],{"value":"object"}]"#, true),
        Case(#"["=",["typeof","properties.missing"],{"value":"undefined"}]"#, true),
        Case(#"["=",["typeof",["length","event"]],{"value":"number"}]"#, true),
        // A non-boolean result is not a match.
        Case(#"["lowercase","event"]"#, false),
        Case(#"["length","properties.tags"]"#, false),
        Case(#"["typeof","event"]"#, false),
        // A bare path or literal as the whole ir: true only when the value is the boolean true.
        Case(#""properties.flag""#, true),
        Case(#""properties.price""#, false),
        Case(#"{"value":true}"#, true),
        Case(#"{"value":"true"}"#, false),
    ]

    @Test(arguments: equality) func equalityOperators(_ c: Case) throws { try check(c) }
    @Test(arguments: ordering) func numericComparisons(_ c: Case) throws { try check(c) }
    @Test(arguments: logic) func logicOperators(_ c: Case) throws { try check(c) }
    @Test(arguments: membership) func inContainsAndMatch(_ c: Case) throws { try check(c) }
    @Test(arguments: functions) func lowercaseLengthTypeof(_ c: Case) throws { try check(c) }

    private func check(_ c: Case) throws {
        let (matched, problems) = FilterFixture.matches(c.ir, try FilterFixture.event())
        #expect(problems.isEmpty, "\(problems)")
        #expect(matched == c.expected)
    }

    @Test func emptyIrNeverMatchesAndIsNoProblem() throws {
        let (matched, problems) = FilterFixture.matches("", try FilterFixture.event())
        #expect(!matched)
        #expect(problems.isEmpty)
    }

    @Test func allMatcherAlwaysMatches() throws {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [FilterFixture.always([["type": "drop"]])]))
        #expect(rules.filter(forDestination: "X").apply(try FilterFixture.event()).event == nil)
    }

    @Test func deepNestingIsRefusedNotACrash() throws {
        let ir = String(repeating: #"["!","#, count: 300) + "\"properties.flag\"" + String(repeating: "]", count: 300)
        let (matched, problems) = FilterFixture.matches(ir, try FilterFixture.event())
        #expect(matched)  // fails closed: dropped
        #expect(problems.count == 1)
        #expect(problems.first?.reason.contains("deeper than") == true)
    }
}
