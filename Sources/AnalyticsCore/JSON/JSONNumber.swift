/// A JSON number: its value as an IEEE double (what filters compare and code computes with, as in
/// JavaScript and on Segment's servers) and, when the text it was read from would not be written
/// back the same from that double, that text — so that `12345678901234567890`, `1.50` or `1E3`
/// leave the host exactly as they came in. Numbers built in code carry no text.
///
/// Equality is numeric (`1.50 == 1.5`); code that needs the exact spelling compares ``text``.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The numeric value (the nearest double to the text it was read from).
    public let value: Double
    /// The text read, kept only when writing `value` would not reproduce it.
    let literal: Literal?

    final class Literal: Sendable {
        let text: String
        init(_ text: String) { self.text = text }
    }

    public init(_ value: Double) {
        self.value = value
        literal = nil
    }

    /// An exact integer: above 2^53 a double cannot hold it, so its digits are kept.
    public init(_ value: Int) {
        let d = Double(value)
        self.value = d
        literal = abs(d) < 1e15 ? nil : Literal(String(value))
    }

    /// A number from its JSON text (RFC 8259 grammar); nil when the text is not a JSON number.
    public init?(text: String) {
        guard let parsed = try? JSON(parsing: text), case .number(let n) = parsed else { return nil }
        self = n
    }

    /// Value and the text it was read from; keeps the text only when the writer would not reproduce it.
    init(value: Double, text: String) {
        self.value = value
        literal = JSONNumber.canonicalText(value) == text ? nil : Literal(text)
    }

    /// Value and text the caller knows differs from `canonicalText(value)`.
    init(value: Double, differingText text: String) {
        self.value = value
        literal = Literal(text)
    }

    /// The JSON text this number is written as.
    public var text: String { literal?.text ?? JSONNumber.canonicalText(value) }
    public var description: String { text }

    /// True when the text read is kept because the double alone would not reproduce it.
    public var hasExactText: Bool { literal != nil }

    /// The value as an exact integer when it is one that fits `Int` (from the kept digits when the
    /// double could not hold them).
    public var intValue: Int? {
        if let text = literal?.text { return Int(text) }
        guard value.rounded() == value, abs(value) < 9.2e18 else { return nil }
        return Int(value)
    }

    /// Numeric equality, as JavaScript's `===` (so `1.50 == 1.5` and `-0 == 0`), except that NaN
    /// equals NaN so that values can be hashed. Compare ``text`` for the exact spelling.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        lhs.value == rhs.value || (lhs.value.isNaN && rhs.value.isNaN)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value.isNaN ? .nan : value)
    }

    /// How the writer spells a double: integers below 10^15 without a fraction ("42", "-0"),
    /// others in Swift's shortest round-tripping form, non-finite values as null (calls carrying
    /// them are rejected before they are written).
    static func canonicalText(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n.rounded() == n && abs(n) < 1e15 {
            if n == 0 { return n.sign == .minus ? "-0" : "0" }
            return String(Int64(n))
        }
        return n.description
    }
}
