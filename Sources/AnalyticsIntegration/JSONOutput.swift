import AnalyticsCore

/// JSON text written straight into a byte buffer, for a vendor request built from parts of an
/// event: a mapping appends names and values as it goes, with no object made per field.
public struct JSONOutput: Sendable {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inline(__always) public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inline(__always) public mutating func byte(_ c: UInt8) { bytes.append(c) }

    public mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    /// `"text"`, escaped as JSON requires.
    public mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { string(utf8: $0) }
    }

    public mutating func string(utf8 s: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var start = 0
        for i in 0..<s.count {
            let c = s[i]
            guard c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") else { continue }
            if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[start..<i])) }
            start = i + 1
            switch c {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            default:
                raw("\\u00")
                bytes.append(Self.hexDigit(c >> 4))
                bytes.append(Self.hexDigit(c & 0xF))
            }
        }
        if start < s.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: s[start..<s.count])) }
        bytes.append(UInt8(ascii: "\""))
    }

    @inline(__always) public static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 48 + nibble : 87 + nibble }

    /// `"name":` (a comma first unless `first`).
    public mutating func key(_ name: String, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func number(_ value: Int) { bytes.append(contentsOf: String(value).utf8) }

    /// Any JSON value: strings and numbers directly (numbers keep their exact text), the rest
    /// through the core's writer.
    public mutating func value(_ value: JSON) {
        switch value {
        case .string(let text): string(text)
        case .number(let n): bytes.append(contentsOf: n.text.utf8)
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .null: raw("null")
        default: value.write(to: &bytes)
        }
    }
}
