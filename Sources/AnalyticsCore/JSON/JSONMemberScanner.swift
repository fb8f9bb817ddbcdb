/// Where each member of a JSON object's text starts and where its value starts and ends, found
/// without decoding anything: what lets the writer copy the unchanged members of an edited event
/// from the text it already has (see `JSONWriter.object(_:derivedFrom:text:)`).
///
/// Accepts any valid JSON object text (whitespace included); answers nil for anything it does not
/// understand, and the caller then writes the object from scratch.
enum JSONMemberScanner {
    struct Member {
        /// The opening quote of the key.
        let start: Int
        /// The first byte of the value, and one past its last.
        let valueStart: Int
        let valueEnd: Int
    }

    /// `knownLength(i)`: the text length of member `i`'s value when the caller knows it (an
    /// object whose text was copied from a pre-encoded fragment), so that long values are
    /// stepped over instead of scanned; checked against the closing byte.
    static func members(of text: UnsafeBufferPointer<UInt8>, knownLength: (Int) -> Int? = { _ in nil }) -> [Member]? {
        let n = text.count
        var i = skipSpace(text, 0)
        guard i < n, text[i] == UInt8(ascii: "{") else { return nil }
        i = skipSpace(text, i + 1)
        var members: [Member] = []
        if i < n, text[i] == UInt8(ascii: "}") { return skipSpace(text, i + 1) == n ? members : nil }
        while true {
            guard i < n, text[i] == UInt8(ascii: "\""), let keyEnd = skipString(text, i) else { return nil }
            var j = skipSpace(text, keyEnd)
            guard j < n, text[j] == UInt8(ascii: ":") else { return nil }
            j = skipSpace(text, j + 1)
            let valueEnd: Int
            if let length = knownLength(members.count), j + length <= n, length > 0,
               text[j] == UInt8(ascii: "{"), text[j + length - 1] == UInt8(ascii: "}") {
                valueEnd = j + length
            } else {
                guard let end = skipValue(text, j) else { return nil }
                valueEnd = end
            }
            members.append(Member(start: i, valueStart: j, valueEnd: valueEnd))
            i = skipSpace(text, valueEnd)
            guard i < n else { return nil }
            if text[i] == UInt8(ascii: "}") { return skipSpace(text, i + 1) == n ? members : nil }
            guard text[i] == UInt8(ascii: ",") else { return nil }
            i = skipSpace(text, i + 1)
        }
    }

    @inline(__always)
    private static func skipSpace(_ t: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int {
        var i = from
        while i < t.count, t[i] == 0x20 || t[i] == 0x0A || t[i] == 0x0D || t[i] == 0x09 { i += 1 }
        return i
    }

    /// One past the closing quote of the string opening at `from`.
    private static func skipString(_ t: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        var i = from + 1
        while i < t.count {
            switch t[i] {
            case UInt8(ascii: "\""): return i + 1
            case UInt8(ascii: "\\"): i += 2
            default: i += 1
            }
        }
        return nil
    }

    /// One past the end of the value starting at `from`.
    private static func skipValue(_ t: UnsafeBufferPointer<UInt8>, _ from: Int) -> Int? {
        guard from < t.count else { return nil }
        switch t[from] {
        case UInt8(ascii: "\""):
            return skipString(t, from)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = from
            while i < t.count {
                switch t[i] {
                case UInt8(ascii: "\""):
                    guard let end = skipString(t, i) else { return nil }
                    i = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return nil
        default:
            // A number, true, false or null: up to the next delimiter.
            var i = from
            while i < t.count {
                let c = t[i]
                if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]")
                    || c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { break }
                i += 1
            }
            return i > from ? i : nil
        }
    }
}
