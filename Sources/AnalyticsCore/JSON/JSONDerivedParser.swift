import Glibc

/// Reading a JSON object that was derived from one the host already holds: a plugin's replacement
/// of an event (a loaded library's REPLACE, a JavaScript plugin's returned event) is the event's
/// own JSON text with a few members changed. The replacement is read in step with the original
/// text: a member whose key and value are byte for byte the original's is taken from the original
/// (its strings, numbers and nested objects shared, not rebuilt), and once the rest of the
/// replacement is the rest of the original, all remaining members are; changed, added and
/// reordered members are parsed as usual. A number whose value did not change keeps the
/// original's text (JavaScript writes back `12345678901234567890` as `12345678901234567000`).
///
/// Exact: the original text must be what the writer made of `original` (an event's encoding is),
/// and reading the writer's text gives back the same value (numbers keep the text the writer would
/// not reproduce, strings are valid Unicode), so a reused member is the member the parser would
/// have built. Duplicate keys: the last value wins at the first one's place, as in
/// ``JSON/init(parsing:)``.
extension JSON {
    /// `text` parsed, reusing members of `original` (whose JSON text is `originalText`) where the
    /// text is unchanged; nil when `text` is JSON but not an object. `unchanged`: the result is
    /// `original` (equal member for member, in the same order, numbers compared by value).
    static func parseObject(_ text: UnsafeBufferPointer<UInt8>, derivedFrom original: JSONObject,
                            originalText: UnsafeBufferPointer<UInt8>)
        -> Result<(object: JSONObject, unchanged: Bool)?, JSONParseError>
    {
        parseDocument(text) { (p) throws(JSONParseError) -> (object: JSONObject, unchanged: Bool)? in
            if p.pos < p.end, p.byte(p.pos) == UInt8(ascii: "{"), originalText.first == UInt8(ascii: "{") {
                var reference = JSONDerivedReference(originalText, text: text)
                let read = try p.parseObject(depth: 1, derivedFrom: original, reference: &reference)
                return read.value.objectValue.map { ($0, !read.changed) }
            }
            guard case .object(let o) = try p.parseValue(depth: 0) else { return nil }
            return (o, false)
        }
    }
}

/// The original text, read in step with the replacement: a cursor that stays on member
/// boundaries of the object being read, and how long a tail the two texts have in common.
struct JSONDerivedReference {
    var text: JSONByteParser
    /// The length of the longest common suffix of the original and the replacement.
    let commonSuffix: Int
    /// The length of the key found by the last successful ``find(keyAt:from:count:)``.
    var foundKeyLength = 0

    init(_ original: UnsafeBufferPointer<UInt8>, text replacement: UnsafeBufferPointer<UInt8>) {
        text = JSONByteParser(original)
        var n = 0
        let limit = min(original.count, replacement.count)
        if let a = original.baseAddress, let b = replacement.baseAddress {
            let aEnd = a + original.count, bEnd = b + replacement.count
            while n + 8 <= limit,
                  UnsafeRawPointer(aEnd - n - 8).loadUnaligned(as: UInt64.self)
                    == UnsafeRawPointer(bEnd - n - 8).loadUnaligned(as: UInt64.self) { n += 8 }
            while n < limit, aEnd[-n - 1] == bEnd[-n - 1] { n += 1 }
        }
        commonSuffix = n
    }
}

/// What reading one value against the original gave.
struct JSONDerived {
    var value: JSON
    /// From where it was noticed, the replacement's text to its very end is the original's: the
    /// enclosing objects and arrays take their remaining members from the original too (and the
    /// parser is then at the end of the text).
    var restIsOriginal = false
    /// Whether the value differs from the original (numbers compared by value, see below).
    var changed = true
}

extension JSONByteParser {
    /// Reads the value at `pos` against `original`, written by the writer at the reference's
    /// position; leaves the reference after it. A number whose value is the original's keeps the
    /// original (its exact text): JavaScript writes `12345678901234567890` back as
    /// `12345678901234567000` and `-0` as `0` though the plugin never changed them.
    mutating func parseValue(depth: Int, derivedFrom original: JSON, reference: inout JSONDerivedReference)
        throws(JSONParseError) -> JSONDerived
    {
        let valueStart = reference.text.pos
        guard reference.text.skipWrittenValue() else { throw fail("the original text is not the writer's") }
        let n = reference.text.pos - valueStart
        if pos + n <= end, memcmp(base! + pos, reference.text.base! + valueStart, n) == 0, endsValue(at: pos + n) {
            pos += n
            return JSONDerived(value: original, changed: false)
        }
        guard pos < end, depth < JSON.maxNestingDepth else { return JSONDerived(value: try parseValue(depth: depth)) }
        switch (byte(pos), original) {
        case (UInt8(ascii: "{"), .object(let o)):
            reference.text.pos = valueStart
            return try parseObject(depth: depth + 1, derivedFrom: o, reference: &reference)
        case (UInt8(ascii: "["), .array(let a)):
            reference.text.pos = valueStart
            return try parseArray(depth: depth + 1, derivedFrom: a, reference: &reference)
        default:
            let value = try parseValue(depth: depth)
            if case .number(let new) = value, case .number(let old) = original, new.value == old.value {
                return JSONDerived(value: original, changed: false)
            }
            return JSONDerived(value: value)
        }
    }

    /// Reads the object at `pos` (its `{`) with the reference at the original's `{`; leaves the
    /// reference after the original's `}`. Unchanged, the result is `original` itself.
    mutating func parseObject(depth: Int, derivedFrom original: JSONObject, reference: inout JSONDerivedReference)
        throws(JSONParseError) -> JSONDerived
    {
        pos += 1
        reference.text.pos += 1
        let members = original.storage
        var pairs: [JSONObject.Member] = []
        pairs.reserveCapacity(members.count + 1)
        var next = 0  // the original member the reference is at
        /// Whether a key not matched to the original was added (only then can a key repeat).
        var foreign = false
        var changed = false
        var mayHaveDuplicates = false

        /// Adds a member; with `checked`, a key already there gets the new value at its place
        /// (as the parser does: over 16 members, that is left to the end).
        func add(_ member: JSONObject.Member, checked: Bool) {
            if checked {
                if pairs.count >= 16 {
                    mayHaveDuplicates = true
                } else if let i = pairs.firstIndex(where: { $0.key == member.key }) {
                    pairs[i].value = member.value
                    return
                }
            }
            pairs.append(member)
        }
        func finish(rest: Bool) -> JSONDerived {
            if !changed { return JSONDerived(value: .object(original), restIsOriginal: rest, changed: false) }
            if mayHaveDuplicates { return JSONDerived(value: .object(JSONObject(pairs.map { ($0.key, $0.value) })), restIsOriginal: rest) }
            return JSONDerived(value: .object(JSONObject(members: pairs)), restIsOriginal: rest)
        }

        skipSpace()
        if pos < end && byte(pos) == UInt8(ascii: "}") {
            pos += 1
            changed = !members.isEmpty
            reference.skipRest(of: members.count - next)
            return finish(rest: false)
        }
        while true {
            skipSpace()
            // The rest of the text is the original's: so are the remaining members, here and above.
            if end - pos == reference.text.end - reference.text.pos, end - pos <= reference.commonSuffix {
                for m in members[next...] { add(m, checked: foreign) }
                pos = end
                return finish(rest: true)
            }
            guard pos < end, byte(pos) == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let match = reference.find(keyAt: self, from: next, count: members.count)
            let key: String
            if let match {
                // Members between the reference and the match were removed.
                if match != next { changed = true }
                reference.skipMembers(match - next)
                next = match
                let n = reference.foundKeyLength
                key = members[match].key
                pos += n + 2
                reference.text.pos += n + 3  // key, quotes and ':' (the writer writes no spaces)
            } else {
                key = try parseString()
                foreign = true
                changed = true
            }
            skipSpace()
            guard pos < end, byte(pos) == UInt8(ascii: ":") else { throw fail("expected ':' after key") }
            pos += 1
            skipSpace()
            if match != nil {
                let read = try parseValue(depth: depth, derivedFrom: members[next].value, reference: &reference)
                if read.changed { changed = true }
                add(JSONObject.Member(key: key, value: read.value), checked: foreign)
                if read.restIsOriginal {
                    for m in members[(next + 1)...] { add(m, checked: foreign) }
                    return finish(rest: true)
                }
                next += 1
                if next < members.count { reference.text.pos += 1 }  // the writer's ','
            } else {
                add(JSONObject.Member(key: key, value: try parseValue(depth: depth)), checked: true)
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
        if next < members.count { changed = true }
        reference.skipRest(of: members.count - next)
        return finish(rest: false)
    }

    /// Reads the array at `pos` (its `[`) element by element against the original's, with the
    /// reference at its `[`; leaves the reference after its `]`. Unchanged, the result is
    /// `original` itself.
    mutating func parseArray(depth: Int, derivedFrom original: [JSON], reference: inout JSONDerivedReference)
        throws(JSONParseError) -> JSONDerived
    {
        pos += 1
        reference.text.pos += 1
        var items: [JSON] = []
        items.reserveCapacity(original.count)
        var changed = false
        func finish(rest: Bool) -> JSONDerived {
            JSONDerived(value: .array(changed ? items : original), restIsOriginal: rest, changed: changed)
        }
        skipSpace()
        if pos < end && byte(pos) == UInt8(ascii: "]") {
            pos += 1
            changed = !original.isEmpty
        } else {
            while true {
                skipSpace()
                let index = items.count
                if index < original.count {
                    let read = try parseValue(depth: depth, derivedFrom: original[index], reference: &reference)
                    if read.changed { changed = true }
                    items.append(read.value)
                    if read.restIsOriginal {
                        items.append(contentsOf: original[(index + 1)...])
                        return finish(rest: true)
                    }
                    if index + 1 < original.count { reference.text.pos += 1 }  // the writer's ','
                } else {
                    changed = true
                    items.append(try parseValue(depth: depth))
                }
                skipSpace()
                guard pos < end else { throw fail("unterminated array") }
                let c = byte(pos)
                pos += 1
                if c == UInt8(ascii: ",") { continue }
                if c == UInt8(ascii: "]") { break }
                pos -= 1
                throw fail("expected ',' or ']' in array")
            }
        }
        // Past the original's elements not read and its ']'.
        if items.count < original.count {
            changed = true
            for i in items.count..<original.count {
                _ = reference.text.skipWrittenValue()
                if i + 1 < original.count { reference.text.pos += 1 }
            }
        }
        reference.text.pos += 1
        return finish(rest: false)
    }

    /// Whether a value that ends at `i` ends there in the text too (a number or literal is only
    /// the same one when it is not longer here).
    private func endsValue(at i: Int) -> Bool {
        guard i < end else { return true }
        switch byte(i) {
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09: return true
        default: return false
        }
    }

    /// Moves past the value at `pos` in the writer's text (no spaces); false when it is malformed.
    mutating func skipWrittenValue() -> Bool {
        var depth = 0
        repeat {
            guard pos < end else { return false }
            switch byte(pos) {
            case UInt8(ascii: "\""):
                guard skipWrittenString() else { return false }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { return false }
                depth -= 1
            case UInt8(ascii: ","), UInt8(ascii: ":"):
                guard depth > 0 else { return false }
            default:
                if depth == 0 {
                    // A number or literal: up to the next delimiter.
                    while pos < end {
                        let d = byte(pos)
                        if d == UInt8(ascii: ",") || d == UInt8(ascii: "}") || d == UInt8(ascii: "]") { break }
                        pos += 1
                    }
                    return true
                }
            }
            pos += 1
        } while depth > 0
        return true
    }

    /// Moves past the string at `pos` (its opening quote), eight bytes at a time where no quote
    /// or backslash is among them; false when it does not end.
    mutating func skipWrittenString() -> Bool {
        pos += 1
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        while true {
            while pos + 8 <= end {
                let w = UnsafeRawPointer(base! + pos).loadUnaligned(as: UInt64.self)
                let q = w ^ (ones &* 0x22), b = w ^ (ones &* 0x5C)
                if ((q &- ones) & ~q & highs) | ((b &- ones) & ~b & highs) != 0 { break }
                pos += 8
            }
            guard pos < end else { return false }
            let c = byte(pos)
            if c == UInt8(ascii: "\"") { pos += 1; return true }
            pos += c == UInt8(ascii: "\\") ? 2 : 1
        }
    }
}

extension JSONDerivedReference {
    /// The index (from `from` on) of the original member whose key is written exactly as the key
    /// at `parser.pos`, scanning ahead without moving the reference; nil when none is.
    mutating func find(keyAt parser: JSONByteParser, from: Int, count: Int) -> Int? {
        var scan = text
        for index in from..<count {
            guard scan.pos < scan.end, scan.byte(scan.pos) == UInt8(ascii: "\"") else { return nil }
            let keyStart = scan.pos + 1
            guard scan.skipWrittenString() else { return nil }
            let n = scan.pos - 1 - keyStart
            let k = parser.pos + 1
            if k + n < parser.end, parser.byte(k + n) == UInt8(ascii: "\""),
               memcmp(parser.base! + k, scan.base! + keyStart, n) == 0 {
                foundKeyLength = n
                return index
            }
            // Past ':' value ','.
            scan.pos += 1
            guard scan.skipWrittenValue() else { return nil }
            scan.pos += 1
        }
        return nil
    }

    /// Moves past `n` members (each followed by the writer's ',').
    mutating func skipMembers(_ n: Int) {
        for _ in 0..<n {
            guard text.skipWrittenString() else { return }
            text.pos += 1
            guard text.skipWrittenValue() else { return }
            text.pos += 1
        }
    }

    /// Moves past the `remaining` members and the `}` of the object the reference is in.
    mutating func skipRest(of remaining: Int) {
        if remaining > 0 {
            skipMembers(remaining - 1)
            _ = text.skipWrittenString()
            text.pos += 1
            _ = text.skipWrittenValue()
        }
        text.pos += 1
    }
}
