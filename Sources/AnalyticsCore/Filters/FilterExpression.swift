/// A compiled FQL expression (the `ir` of a matcher): a tree built once per settings update and
/// evaluated per event with no parsing and no text handling except what the operators need.
indirect enum FilterExpression: Sendable {
    case literal(JSON)
    case path(FilterPath)
    case not(FilterExpression)
    case and([FilterExpression])
    case or([FilterExpression])
    case equal(FilterExpression, FilterExpression, negated: Bool)
    case compare(FilterExpression, FilterExpression, NumericComparison)
    case isIn(FilterExpression, [FilterExpression])
    case contains(FilterExpression, FilterExpression)
    /// `match` whose glob is a literal, compiled ahead; nil when the literal is not a string or
    /// the pattern is malformed, which never matches.
    case matchCompiled(FilterExpression, GlobPattern?)
    /// `match` whose glob is only known per event.
    case matchDynamic(FilterExpression, FilterExpression)
    case lowercase(FilterExpression)
    case length(FilterExpression)
    case typeOf(FilterExpression)

    enum NumericComparison: Sendable {
        case less, lessOrEqual, greater, greaterOrEqual
    }

    /// A matcher's verdict: only a boolean `true` result matches.
    @inline(__always)
    func matches(_ payload: JSONObject) -> Bool {
        test(payload)
    }

    /// The boolean operators and the comparisons, evaluated without building a value.
    func test(_ payload: JSONObject) -> Bool {
        switch self {
        case .not(let x): return !x.truthy(payload)
        case .and(let xs):
            for x in xs where !x.truthy(payload) { return false }
            return true
        case .or(let xs):
            for x in xs where x.truthy(payload) { return true }
            return false
        case .equal(let a, let b, let negated):
            return FilterSemantics.equal(a.value(payload), b.value(payload)) != negated
        case .compare(let a, let b, let op):
            guard case .number(let x)? = a.value(payload), case .number(let y)? = b.value(payload) else { return false }
            switch op {
            case .less: return x.value < y.value
            case .lessOrEqual: return x.value <= y.value
            case .greater: return x.value > y.value
            case .greaterOrEqual: return x.value >= y.value
            }
        case .isIn(let x, let items):
            let v = x.value(payload)
            for item in items where FilterSemantics.equal(v, item.value(payload)) { return true }
            return false
        case .contains(let a, let b):
            guard case .string(let s)? = a.value(payload), case .string(let t)? = b.value(payload) else { return false }
            return FilterSemantics.containsSubstring(s, t)
        case .matchCompiled(let a, let glob):
            guard let glob, case .string(let s)? = a.value(payload) else { return false }
            return glob.matches(s)
        case .matchDynamic(let a, let b):
            guard case .string(let s)? = a.value(payload), case .string(let g)? = b.value(payload),
                let glob = GlobPattern(g)
            else { return false }
            return glob.matches(s)
        case .literal, .path, .lowercase, .length, .typeOf:
            // A bare operand is only a verdict when it is literally `true`.
            if case .bool(true)? = value(payload) { return true }
            return false
        }
    }

    /// As an operand of `!`, `and`, `or`: bare paths and literals count only when `true`;
    /// function results follow JavaScript truthiness (as on the server).
    @inline(__always)
    func truthy(_ payload: JSONObject) -> Bool {
        switch self {
        case .lowercase, .length, .typeOf: return FilterSemantics.truthy(value(payload))
        default: return test(payload)
        }
    }

    /// The value of an operand; nil is `undefined`.
    func value(_ payload: JSONObject) -> JSON? {
        switch self {
        case .literal(let v): return v
        case .path(let p): return p.value(in: payload)
        case .lowercase(let x):
            guard case .string(let s)? = x.value(payload) else { return .null }
            return .string(s.lowercased())
        case .length(let x): return .number(FilterSemantics.length(x.value(payload)))
        case .typeOf(let x): return .string(FilterSemantics.typeName(x.value(payload)))
        default: return .bool(test(payload))
        }
    }
}
