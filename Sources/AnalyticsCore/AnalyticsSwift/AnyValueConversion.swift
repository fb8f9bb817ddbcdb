import Foundation

/// Turns the loosely typed values of analytics-swift's call shapes (`[String: Any]`, `Encodable`
/// types) into ``JSON`` once, at the edge, so that everything after the call is typed.
///
/// A value that has no JSON form (a class instance, a non-finite number, a dictionary with
/// non-string keys) is left out and described by a ``Problem`` naming its path; everything else
/// in the same call is kept. Nothing here traps.
package enum AnyValueConversion {
    /// One value left out, e.g. `properties.when: a NSObject has no JSON form`.
    package struct Problem: Sendable, Equatable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// An object from a dictionary; values without a JSON form are left out and listed.
    package static func object(_ dictionary: [String: Any], path: String) -> (JSONObject, [Problem]) {
        var problems: [Problem] = []
        var object = JSONObject()
        // Sorted: a Swift dictionary has no order, and the same call should give the same text.
        for key in dictionary.keys.sorted() {
            if let value = json(dictionary[key]!, path: path + "." + key, problems: &problems) { object[key] = value }
        }
        return (object, problems)
    }

    /// Any value as JSON, or nil (with a problem) when it has none.
    package static func json(_ value: Any, path: String) -> (JSON?, [Problem]) {
        var problems: [Problem] = []
        let result = json(value, path: path, problems: &problems)
        return (result, problems)
    }

    /// An `Encodable` value as JSON, through `JSONEncoder` (dates as ISO-8601 with milliseconds,
    /// like the rest of the payload).
    package static func json<T: Encodable>(encoding value: T, path: String) -> (JSON?, [Problem]) {
        do {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .custom { date, encoder in
                var c = encoder.singleValueContainer()
                try c.encode(timestamp(date))
            }
            encoder.nonConformingFloatEncodingStrategy = .throw
            let data = try encoder.encode(value)
            return (try JSON(parsing: data), [])
        } catch {
            return (nil, [Problem(path: path, reason: "a \(type(of: value)) could not be encoded: \(describe(error))")])
        }
    }

    static func json(_ value: Any, path: String, problems: inout [Problem]) -> JSON? {
        // An NSNumber (JSONSerialization, Objective-C style code) says itself whether it is a Bool.
        if type(of: value) is NSNumber.Type, let n = value as? NSNumber { return number(n, path: path, problems: &problems) }
        switch value {
        case let v as JSON: return checkedFinite(v, path: path, problems: &problems)
        case let v as JSONObject: return checkedFinite(.object(v), path: path, problems: &problems)
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as Character: return .string(String(v))
        case let v as Bool: return .bool(v)
        case let v as Int: return .number(JSONNumber(v))
        case let v as Int8: return .number(JSONNumber(Int(v)))
        case let v as Int16: return .number(JSONNumber(Int(v)))
        case let v as Int32: return .number(JSONNumber(Int(v)))
        case let v as Int64: return .number(JSONNumber(Int(v)))
        case let v as UInt8: return .number(JSONNumber(Int(v)))
        case let v as UInt16: return .number(JSONNumber(Int(v)))
        case let v as UInt32: return .number(JSONNumber(Int(v)))
        case let v as UInt: return v <= UInt(Int.max) ? .number(JSONNumber(Int(v))) : finite(Double(v), path: path, problems: &problems)
        case let v as UInt64: return v <= UInt64(Int.max) ? .number(JSONNumber(Int(v))) : finite(Double(v), path: path, problems: &problems)
        case let v as Double: return finite(v, path: path, problems: &problems)
        case let v as Float: return finite(Double(v), path: path, problems: &problems)
        case let v as Decimal: return finite(NSDecimalNumber(decimal: v).doubleValue, path: path, problems: &problems)
        case is NSNull: return .null
        case let v as Date: return .string(timestamp(v))
        case let v as URL: return .string(v.absoluteString)
        case let v as UUID: return .string(v.uuidString)
        case let v as [String: Any]:
            var object = JSONObject()
            for key in v.keys.sorted() {
                if let member = json(v[key]!, path: path + "." + key, problems: &problems) { object[key] = member }
            }
            return .object(object)
        case let v as [AnyHashable: Any]:
            var object = JSONObject()
            for (key, member) in v.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                guard let name = key.base as? String else {
                    problems.append(Problem(path: path, reason: "key \(key.base) is a \(type(of: key.base)), not a String"))
                    continue
                }
                if let converted = json(member, path: path + "." + name, problems: &problems) { object[name] = converted }
            }
            return .object(object)
        case let v as [Any]:
            var items: [JSON] = []
            items.reserveCapacity(v.count)
            for (i, element) in v.enumerated() {
                // An element without a JSON form becomes null so that indices keep their meaning.
                items.append(json(element, path: "\(path).\(i)", problems: &problems) ?? .null)
            }
            return .array(items)
        default:
            let mirror = Mirror(reflecting: value)
            if mirror.displayStyle == .optional {
                guard let wrapped = mirror.children.first?.value else { return .null }
                return json(wrapped, path: path, problems: &problems)
            }
            if let encodable = value as? any Encodable {
                let (converted, more) = json(encoding: encodable, path: path)
                problems += more
                return converted
            }
            problems.append(Problem(path: path, reason: "a \(type(of: value)) has no JSON form (use a String, number, Bool, Date, URL, array, dictionary or an Encodable type)"))
            return nil
        }
    }

    private static func finite(_ v: Double, path: String, problems: inout [Problem]) -> JSON? {
        guard v.isFinite else {
            problems.append(Problem(path: path, reason: "\(v) is not a finite number (JSON has no NaN or infinity)"))
            return nil
        }
        return .number(v)
    }

    private static func checkedFinite(_ v: JSON, path: String, problems: inout [Problem]) -> JSON? {
        guard v.isFinite else {
            problems.append(Problem(path: path, reason: "contains a non-finite number (JSON has no NaN or infinity)"))
            return nil
        }
        return v
    }

    /// NSNumber (from JSONSerialization or Objective-C style code): booleans stay booleans.
    private static func number(_ n: NSNumber, path: String, problems: inout [Problem]) -> JSON? {
        let kind = String(cString: n.objCType)
        if kind == "c" || kind == "B" { return .bool(n.boolValue) }
        if kind == "d" || kind == "f" { return finite(n.doubleValue, path: path, problems: &problems) }
        if kind == "Q" || kind == "L" || kind == "I" { return n.uint64Value <= UInt64(Int.max) ? .number(JSONNumber(n.intValue)) : .number(n.doubleValue) }
        return .number(JSONNumber(n.intValue))
    }

    /// ISO-8601 in UTC with milliseconds, the format of every timestamp in the payload.
    static func timestamp(_ date: Date) -> String {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let seconds = Int((ms / 1000).rounded(.down))
        return ISOTimestamp.format(seconds: seconds, milliseconds: Int(ms) - seconds * 1000)
    }

    private static func describe(_ error: Error) -> String {
        if case EncodingError.invalidValue(let value, let context) = error {
            let at = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "\(value) at \(at.isEmpty ? "top level" : at): \(context.debugDescription)"
        }
        return "\(error)"
    }
}

/// A ``JSONObject`` is `Codable` so that typed properties go through the `Encodable` call shapes
/// of analytics-swift (`track(name:properties:)` with a `JSONObject` value) unchanged.
extension JSONObject: Codable {
    public init(from decoder: any Decoder) throws {
        guard case .object(let object) = try JSON(from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "expected a JSON object"))
        }
        self = object
    }

    public func encode(to encoder: any Encoder) throws {
        try JSON.object(self).encode(to: encoder)
    }
}
