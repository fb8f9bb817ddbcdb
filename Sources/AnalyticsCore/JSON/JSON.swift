/// A JSON value: the one type that events, properties, traits, context, integration options and
/// settings are made of, so that nothing in the public API needs `Any`.
///
/// Numbers are IEEE doubles, as in JavaScript and on Segment's servers, that remember the text
/// they were read from when the double alone would not reproduce it (see ``JSONNumber``); objects
/// keep their key order (see ``JSONObject``) so that a payload round-trips to the same text.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSON])
    case object(JSONObject)

    /// A number from a double (numbers built in code; the parser keeps exact text where needed).
    public static func number(_ value: Double) -> JSON { .number(JSONNumber(value)) }

    // MARK: Typed access

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var doubleValue: Double? { if case .number(let n) = self { return n.value }; return nil }
    public var numberValue: JSONNumber? { if case .number(let n) = self { return n }; return nil }
    public var intValue: Int? { if case .number(let n) = self { return n.intValue }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var arrayValue: [JSON]? { if case .array(let a) = self { return a }; return nil }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o }; return nil }
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// Member of an object (nil when this is not an object or the key is absent).
    public subscript(key: String) -> JSON? {
        get { objectValue?[key] }
        set {
            guard case .object(var o) = self else { return }
            self = .null  // release the reference so the object is uniquely owned
            o[key] = newValue
            self = .object(o)
        }
    }

    /// Element of an array (nil when out of range or not an array).
    public subscript(index: Int) -> JSON? {
        guard case .array(let a) = self, a.indices.contains(index) else { return nil }
        return a[index]
    }

    /// The value at a dotted path (`"context.app.version"`, `"products.0.price"`): numeric segments
    /// index arrays. Nil when any step is missing.
    public subscript(path path: String) -> JSON? {
        var current = self
        for segment in path.split(separator: ".", omittingEmptySubsequences: false) {
            switch current {
            case .object(let o):
                guard let next = o[String(segment)] else { return nil }
                current = next
            case .array(let a):
                guard let i = Int(segment), a.indices.contains(i) else { return nil }
                current = a[i]
            default:
                return nil
            }
        }
        return current
    }

    /// "a string", "an object", … for error messages that say what was found.
    public static func kindName(_ value: JSON) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// True when every number inside is finite (JSON cannot carry NaN or infinities).
    /// Most nested objects and arrays the parser reads (the whole document counts: `{}` is one
    /// level), so that hostile input cannot exhaust the stack.
    public static let maxNestingDepth = 512

    /// Whether objects and arrays nest deeper than `levels` in this value (`{}` and `[]` are one
    /// level, a scalar none). Stops at the first branch that does.
    public func nests(deeperThan levels: Int) -> Bool {
        switch self {
        case .array(let a): return levels < 1 || a.contains { $0.nests(deeperThan: levels - 1) }
        case .object(let o): return levels < 1 || o.storage.contains { $0.value.nests(deeperThan: levels - 1) }
        default: return false
        }
    }

    public var isFinite: Bool {
        switch self {
        case .number(let n): return n.value.isFinite
        case .array(let a): return a.allSatisfy(\.isFinite)
        case .object(let o): return o.storage.allSatisfy { $0.value.isFinite }  // no array of values built
        default: return true
        }
    }
}

// MARK: - Literals

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(JSONObject(elements))
    }
}

// MARK: - Codable (bridges user types to JSON through Foundation coders)

extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSON].self) { self = .array(a) }
        else if let o = try? c.decode([String: JSON].self) {
            self = .object(JSONObject(o.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        } else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): try c.encode(n.value)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o):
            var d: [String: JSON] = [:]
            for (k, v) in o { d[k] = v }
            try c.encode(d)
        }
    }
}

extension JSON: CustomStringConvertible {
    /// Compact JSON text.
    public var description: String { serialized() }
}
