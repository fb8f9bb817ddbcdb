import Foundation

/// Why a JSON text could not be read: what went wrong and where — the byte offset, and the line
/// and column (1-based; the column counts characters) for texts that people edit.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var line: Int
    public var column: Int

    public init(message: String, offset: Int, line: Int = 1, column: Int? = nil) {
        self.message = message
        self.offset = offset
        self.line = line
        self.column = column ?? offset + 1
    }

    /// Where, as an editor shows it: line and column (a column counts characters, from 1).
    public var description: String { "invalid JSON at line \(line), column \(column): \(message)" }

    /// For a text that is one line of a file the caller names by its own line number (an NDJSON
    /// line of events or signals): the column only.
    public var columnDescription: String { "invalid JSON at column \(column): \(message)" }

    /// Line and column of `offset` in `buffer`, computed only when there is an error to report.
    static func locate(_ offset: Int, in buffer: UnsafeBufferPointer<UInt8>) -> (line: Int, column: Int) {
        var line = 1, column = 1
        for b in buffer.prefix(min(offset, buffer.count)) {
            if b == 0x0A { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }
}

extension JSON {
    /// Parses JSON text (RFC 8259). Duplicate keys: the last one wins, as in JavaScript.
    /// Nesting is limited to ``JSON/maxNestingDepth`` levels so that hostile input cannot exhaust the stack.
    public init(parsing text: String) throws(JSONParseError) {
        var text = text
        self = try text.withUTF8 { JSON.parse($0) }.get()
    }

    public init(parsing data: Data) throws(JSONParseError) {
        self = try data.withUnsafeBytes { raw in
            JSON.parse(UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
        }.get()
    }

    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        self = try bytes.withUnsafeBufferPointer { JSON.parse($0) }.get()
    }

    public init(parsingUTF8 buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) {
        self = try JSON.parse(buffer).get()
    }

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<JSON, JSONParseError> {
        parseDocument(buffer) { (p) throws(JSONParseError) in try p.parseValue(depth: 0) }
    }

    /// One whole document: white space around `body`'s value and nothing after it; an error is
    /// located by line and column.
    static func parseDocument<T>(_ buffer: UnsafeBufferPointer<UInt8>,
                                 _ body: (inout JSONByteParser) throws(JSONParseError) -> T) -> Result<T, JSONParseError> {
        var p = JSONByteParser(buffer)
        do throws(JSONParseError) {
            p.skipSpace()
            let value = try body(&p)
            p.skipSpace()
            if p.pos != p.end { throw p.fail("unexpected text after the value") }
            return .success(value)
        } catch {
            var located = error
            (located.line, located.column) = JSONParseError.locate(error.offset, in: buffer)
            return .failure(located)
        }
    }
}

struct JSONByteParser {
    let base: UnsafePointer<UInt8>?
    var pos = 0
    let end: Int

    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        base = buffer.baseAddress
        end = buffer.count
    }

    @inline(__always) func byte(_ i: Int) -> UInt8 { base![i] }

    func fail(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: pos) }

    @inline(__always) mutating func skipSpace() {
        while pos < end {
            let c = byte(pos)
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos += 1 } else { return }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard pos < end else { throw fail("unexpected end of input") }
        switch byte(pos) {
        case UInt8(ascii: "{"):
            guard depth < JSON.maxNestingDepth else { throw fail("nesting deeper than \(JSON.maxNestingDepth) levels") }
            return .object(try parseObject(depth: depth + 1))
        case UInt8(ascii: "["):
            guard depth < JSON.maxNestingDepth else { throw fail("nesting deeper than \(JSON.maxNestingDepth) levels") }
            return .array(try parseArray(depth: depth + 1))
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true"); return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false"); return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw fail("unexpected character '\(Character(Unicode.Scalar(byte(pos))))'")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard end - pos >= n else { throw fail("unexpected end of input") }
        for i in 0..<n where byte(pos + i) != word.utf8Start[i] { throw fail("invalid literal") }
        pos += n
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONObject {
        pos += 1
        var pairs: [JSONObject.Member] = []
        skipSpace()
        if pos < end && byte(pos) == UInt8(ascii: "}") { pos += 1; return JSONObject(members: pairs) }
        var mayHaveDuplicates = false
        while true {
            skipSpace()
            guard pos < end, byte(pos) == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard pos < end, byte(pos) == UInt8(ascii: ":") else { throw fail("expected ':' after key") }
            pos += 1
            skipSpace()
            let value = try parseValue(depth: depth)
            if pairs.count < 16 {
                if let i = pairs.firstIndex(where: { $0.key == key }) { pairs[i].value = value } else { pairs.append(JSONObject.Member(key: key, value: value)) }
            } else {
                mayHaveDuplicates = true
                pairs.append(JSONObject.Member(key: key, value: value))
            }
            skipSpace()
            guard pos < end else { throw fail("unterminated object") }
            let c = byte(pos)
            pos += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            pos -= 1
            throw fail("expected ',' or '}' in object")
        }
        if mayHaveDuplicates { return JSONObject(pairs.map { ($0.key, $0.value) }) }
        return JSONObject(members: pairs)
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> [JSON] {
        pos += 1
        var items: [JSON] = []
        skipSpace()
        if pos < end && byte(pos) == UInt8(ascii: "]") { pos += 1; return items }
        while true {
            skipSpace()
            items.append(try parseValue(depth: depth))
            skipSpace()
            guard pos < end else { throw fail("unterminated array") }
            let c = byte(pos)
            pos += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { break }
            pos -= 1
            throw fail("expected ',' or ']' in array")
        }
        return items
    }

    /// Strings must be valid UTF-8 (RFC 8259 §8.1): bad bytes are an error naming their offset,
    /// not silently replaced. ASCII — most strings — is known valid from the scan itself.
    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1
        let start = pos
        var high: UInt8 = 0
        // Fast path: no escapes.
        while pos < end {
            let c = byte(pos)
            if c == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(start: base! + start, count: pos - start)
                let s: String
                if high < 0x80 {
                    s = String(decoding: raw, as: UTF8.self)
                } else {
                    guard let valid = String(validating: raw, as: UTF8.self) else { throw invalidUTF8(from: start) }
                    s = valid
                }
                pos += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            high |= c
            pos += 1
        }
        var bytes = [UInt8](UnsafeBufferPointer(start: base! + start, count: pos - start))
        while pos < end {
            let c = byte(pos)
            if c == UInt8(ascii: "\"") {
                pos += 1
                if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
                guard let valid = String(validating: bytes, as: UTF8.self) else {
                    pos -= 1
                    throw invalidUTF8(from: start)
                }
                return valid
            }
            high |= c
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { bytes.append(c); pos += 1; continue }
            pos += 1
            guard pos < end else { break }
            let e = byte(pos)
            pos += 1
            switch e {
            case UInt8(ascii: "\""): bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C)
            case UInt8(ascii: "/"): bytes.append(0x2F)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate must be followed by \u and a low surrogate; otherwise U+FFFD.
                    if end - pos >= 6, byte(pos) == UInt8(ascii: "\\"), byte(pos + 1) == UInt8(ascii: "u") {
                        pos += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            appendScalar(0xFFFD, to: &bytes)
                            scalar = low
                        }
                    } else {
                        scalar = 0xFFFD
                    }
                }
                if (0xD800...0xDFFF).contains(scalar) { scalar = 0xFFFD }
                appendScalar(scalar, to: &bytes)
            default:
                pos -= 1
                throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    /// The error for a string starting at `start` that is not valid UTF-8, at its first bad byte.
    func invalidUTF8(from start: Int) -> JSONParseError {
        var i = start
        while i < pos {
            let c = byte(i)
            let n = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0
            guard n > 0, i + n <= pos,
                  String(validating: UnsafeBufferPointer(start: base! + i, count: n), as: UTF8.self) != nil
            else { break }
            i += n
        }
        return JSONParseError(message: "not valid UTF-8 (byte 0x\(String(byte(min(i, end - 1)), radix: 16)))", offset: i)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard end - pos >= 4 else { throw fail("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = byte(pos)
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - 55)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    func appendScalar(_ v: UInt32, to bytes: inout [UInt8]) {
        let scalar = Unicode.Scalar(v) ?? "\u{FFFD}"
        bytes.append(contentsOf: UTF8.encode(scalar)!)
    }

    /// A number and, when the writer would not spell its double the same way, its text (see
    /// ``JSONNumber``). Short integers and plain decimals with at most 15 significant digits are
    /// decided by their syntax alone; only the rest (long integers, exponents, trailing zeros)
    /// pay for a comparison.
    mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = pos
        if byte(pos) == UInt8(ascii: "-") { pos += 1 }
        guard pos < end, (48...57).contains(byte(pos)) else { throw fail("invalid number") }
        var integer: Int64 = 0
        var digits = 0
        if byte(pos) == UInt8(ascii: "0") {
            pos += 1
        } else {
            while pos < end, (48...57).contains(byte(pos)) {
                integer = integer &* 10 &+ Int64(byte(pos) - 48)
                digits += 1
                pos += 1
            }
        }
        var fractionDigits = 0
        var fractionLeadingZeros = 0
        var fractionEndsInZero = false
        if pos < end, byte(pos) == UInt8(ascii: ".") {
            pos += 1
            guard pos < end, (48...57).contains(byte(pos)) else { throw fail("invalid number: digit expected after '.'") }
            var leading = true
            while pos < end, (48...57).contains(byte(pos)) {
                if leading { if byte(pos) == 48 { fractionLeadingZeros += 1 } else { leading = false } }
                fractionDigits += 1
                pos += 1
            }
            fractionEndsInZero = byte(pos - 1) == 48
        }
        var exponent = false
        if pos < end, byte(pos) | 0x20 == UInt8(ascii: "e") {
            exponent = true
            pos += 1
            if pos < end, byte(pos) == UInt8(ascii: "+") || byte(pos) == UInt8(ascii: "-") { pos += 1 }
            guard pos < end, (48...57).contains(byte(pos)) else { throw fail("invalid number: digit expected in exponent") }
            while pos < end, (48...57).contains(byte(pos)) { pos += 1 }
        }
        let negative = byte(start) == UInt8(ascii: "-")
        if fractionDigits == 0 && !exponent && digits <= 15 {
            // Written back as the same digits ("-0" included).
            let v = Double(integer)
            return JSONNumber(negative ? (integer == 0 ? -0.0 : -v) : v)
        }
        let text = String(decoding: UnsafeBufferPointer(start: base! + start, count: pos - start), as: UTF8.self)
        guard let v = Double(text) else { throw fail("invalid number") }
        // A double holds no larger magnitude: refused rather than read as infinity, which has no
        // JSON spelling and would come out as `null`.
        guard v.isFinite else { throw fail("number out of range") }
        if fractionDigits == 0 && !exponent {
            // 16 digits or more: the writer would use an exponent, so the digits are kept.
            return JSONNumber(value: v, differingText: text)
        }
        if !exponent && !fractionEndsInZero && digits <= 15 {
            // A plain decimal of at most 15 significant digits is the shortest text of its double,
            // and Swift writes it the same way from 1e-4 up (below 2^53).
            let significant = digits > 0 ? digits + fractionDigits : fractionDigits - fractionLeadingZeros
            if significant <= 15 && (digits > 0 || fractionLeadingZeros <= 3) { return JSONNumber(v) }
        }
        return JSONNumber(value: v, text: text)
    }
}
