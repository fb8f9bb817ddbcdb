// FQL compile + evaluate, and the routing rule around it. Input: line 1 is a matcher's `ir`
// text, line 2 an event payload (JSON; a fixed track event when absent or unusable), line 3 the
// rule's transformer list (JSON; none when absent).
// Properties: compiling never crashes and fails with a position; evaluation is deterministic; the
// rule compiler agrees with the expression compiler; an event the matcher does not select comes
// out untouched; a kept event still encodes to JSON that parses back to its payload.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/FQL.dict -max_len=8192
@testable import AnalyticsCore

private let defaultPayload: JSONObject = [
    "type": "track", "event": "Order Completed", "userId": "u1",
    "properties": ["total": 30.5, "currency": "EUR", "tags": ["a", "b"], "email": "x@example.com"],
    "context": ["app": ["version": "1.2.0"], "library": ["name": "analytics-host"]],
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFilterRules(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    let (irBytes, rest) = fuzzSplit(input, at: 0x0A)
    var payloadBytes: [UInt8]? = nil
    var transformerBytes: [UInt8]? = nil
    if let rest {
        let (p, t) = rest.withUnsafeBufferPointer { fuzzSplit($0, at: 0x0A) }
        payloadBytes = p
        transformerBytes = t
    }
    var payload = defaultPayload
    if let payloadBytes, case .object(let o)? = try? JSON(parsing: payloadBytes) { payload = o }
    if Event.validType(payload) == nil { payload["type"] = "track" }
    let event: Event
    do { event = try Event(payload: payload) } catch { fuzzFail("could not build the event: \(error)") }

    // 1. The expression on its own.
    let irText = String(decoding: irBytes, as: UTF8.self)
    var compiled: FilterExpression?
    if !irText.isEmpty, let ir = try? JSON(parsing: irText) {
        do throws(FilterExpressionCompiler.Failure) {
            let expression = try FilterExpressionCompiler.compile(ir)
            let first = expression.matches(event.payload)
            fuzzCheck(expression.matches(event.payload) == first, "evaluation is not deterministic")
            _ = expression.value(event.payload)
            compiled = expression
        } catch {
            fuzzCheck(error.position.hasPrefix("ir") && !error.reason.isEmpty, "failure without position or reason: \(error)")
        }
    }

    // 2. The same ir in a routing rule, with the transformers.
    var transformers: JSON = []
    if let transformerBytes, let t = try? JSON(parsing: transformerBytes) { transformers = t }
    let rule: JSON = ["matchers": [["type": "fql", "ir": .string(irText)]], "transformers": [transformers],
                      "destinationName": "Fuzz"]
    let rules = RoutingRules(settings: ["middlewareSettings": ["routingRules": [rule]]], random: { 0.25 })
    let matcherProblems = rules.problems.filter { $0.path.contains(".matchers[0]") }
    if compiled != nil {
        fuzzCheck(matcherProblems.isEmpty, "the expression compiles alone but not in a rule: \(matcherProblems)")
    } else if !irText.isEmpty {
        fuzzCheck(!matcherProblems.isEmpty, "the rule accepts an ir the compiler refuses")
    }
    let filter = rules.filter(forDestination: "Fuzz")
    fuzzCheck((filter.failure == nil) == rules.problems.isEmpty, "fail-closed state disagrees with the problems found")
    fuzzCheck(rules.filter(forDestination: "Other").isPassThrough, "a rule named for Fuzz applies to Other")

    let outcome = filter.apply(event)
    let replay = filter.apply(event)
    switch (outcome, replay) {
    case (.kept(let a), .kept(let b)):
        fuzzCheck(a.payload == b.payload && a.serializedBytes == b.serializedBytes, "filtering is not deterministic")
        let text = a.serializedBytes
        guard case .object(let back)? = try? JSON(parsing: text), back == a.payload else {
            fuzzFail("a kept event does not encode to its payload: \(String(decoding: text, as: UTF8.self))")
        }
        if let compiled, !compiled.matches(event.payload) {
            fuzzCheck(a.serializedBytes == event.serializedBytes, "an event the matcher does not select was changed")
        }
    case (.dropped(let a), .dropped(let b)):
        fuzzCheck(a == b && !a.isEmpty, "drop reasons differ or are empty: \(a) / \(b)")
        if let compiled, filter.failure == nil, !compiled.matches(event.payload) {
            fuzzFail("an event the matcher does not select was dropped: \(a)")
        }
    default:
        fuzzFail("filtering is not deterministic")
    }
    return 0
}

extension Event {
    fileprivate static func validType(_ payload: JSONObject) -> EventType? {
        payload["type"]?.stringValue.flatMap(EventType.init(rawValue:))
    }
}
