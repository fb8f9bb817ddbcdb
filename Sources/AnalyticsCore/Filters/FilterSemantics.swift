import Glibc

/// The value rules of the filter language, written to agree with Segment's server, which
/// evaluates filters in JavaScript. A value is `JSON?`: nil is JavaScript's `undefined` (a
/// missing path), distinct from JSON `null`.
enum FilterSemantics {
    /// `=`: objects, arrays and null on both sides compare by their JSON text as JavaScript writes
    /// it (so key order matters, as on the server, and numbers by value); everything else is strict equality — `1` ≠ `"1"`, `1` = `1.0`,
    /// NaN equals nothing, two missing values are equal, `null` ≠ missing. Strings compare by
    /// their exact characters (no Unicode normalisation, like JavaScript's `===`).
    static func equal(_ a: JSON?, _ b: JSON?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        switch (a, b) {
        case (.string(let x), .string(let y)): return exactlyEqual(x, y)
        case (.number(let x), .number(let y)): return x.value == y.value
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        case (.null, .array), (.null, .object), (.array, .null), (.object, .null),
            (.array, .array), (.array, .object), (.object, .array), (.object, .object):
            return a.javaScriptTextBytes() == b.javaScriptTextBytes()
        default: return false
        }
    }

    /// JavaScript's `typeof`.
    static func typeName(_ v: JSON?) -> String {
        switch v {
        case nil: return "undefined"
        case .string?: return "string"
        case .number?: return "number"
        case .bool?: return "boolean"
        case .null?, .array?, .object?: return "object"
        }
    }

    /// `length`: UTF-16 units of a string (as in JavaScript), elements of an array, 0 for null,
    /// NaN for anything else (NaN then fails every comparison).
    static func length(_ v: JSON?) -> Double {
        switch v {
        case .string(let s)?: return Double(s.utf16.count)
        case .array(let a)?: return Double(a.count)
        case .null?: return 0
        default: return .nan
        }
    }

    /// JavaScript truthiness, for operands of `!`, `and`, `or` that are function results.
    static func truthy(_ v: JSON?) -> Bool {
        switch v {
        case nil, .null?: return false
        case .bool(let b)?: return b
        case .number(let n)?: return n.value != 0 && !n.value.isNaN
        case .string(let s)?: return !s.isEmpty
        case .array?, .object?: return true
        }
    }

    /// Byte-for-byte equality of the UTF-8 text (Swift's `==` on String would treat canonically
    /// equivalent spellings such as precomposed and combining accents as equal).
    @inline(__always)
    static func exactlyEqual(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 } }
    }

    /// `contains`: `needle` occurs in `haystack` as a run of code points (an empty needle always
    /// does), like JavaScript's `indexOf(...) !== -1`.
    static func containsSubstring(_ haystack: String, _ needle: String) -> Bool {
        if needle.utf8.isEmpty { return true }
        guard needle.utf8.count <= haystack.utf8.count else { return false }
        var h = haystack, n = needle
        return h.withUTF8 { hb in
            n.withUTF8 { nb in
                let first = nb[0]
                var i = 0
                let last = hb.count - nb.count
                while i <= last {
                    if hb[i] == first, memcmp(hb.baseAddress! + i, nb.baseAddress!, nb.count) == 0 { return true }
                    i += 1
                }
                return false
            }
        }
    }
}
