/// A compiled glob for the filter language's `match`, with the syntax of Go's `path.Match` as
/// Segment's reference (tsub) uses it: `*` matches any run of characters (including `/`; a filter
/// glob is not a file path), `?` exactly one, `[a-z]` one in a set, `[^a-z]` one outside it, and
/// `\` makes the next character literal (also inside a set). Only `^` negates: `[!O]` is the set
/// of `!` and `O`. A reversed range (`[z-a]`) is empty: it matches nothing (and `[^z-a]` any
/// character). The whole string must match.
///
/// A "character" is a Unicode scalar, so `?` matches `é` or `😀` as one (the reference, in
/// JavaScript, takes one UTF-16 unit). Matching runs on the UTF-8 bytes without allocating; it is
/// the classic linear-backtracking wildcard match (only the latest `*` is retried), so a hostile
/// pattern costs O(pattern × text), never more.
///
/// Malformed patterns — an unterminated or empty set (`[`, `[]`; write `\]` for a literal `]`), a
/// set member that is an unescaped `-` or `]` (`[-a]`, `[O-]`: a range with no upper end), a
/// trailing `\` — do not compile; callers treat them as "never matches", as the reference does.
struct GlobPattern: Sendable {
    enum Token: Sendable {
        /// One or more literal scalars, as UTF-8.
        case literal([UInt8])
        case anyOne
        case anyRun
        case set(negated: Bool, ranges: [ClosedRange<UInt32>])
    }

    let tokens: [Token]

    /// Nil when the pattern is malformed.
    init?(_ pattern: String) {
        var tokens: [Token] = []
        var literal: [UInt8] = []
        func flush() {
            if !literal.isEmpty { tokens.append(.literal(literal)); literal.removeAll() }
        }
        let scalars = Array(pattern.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            switch c {
            case "*":
                flush()
                if case .anyRun? = tokens.last {} else { tokens.append(.anyRun) }
                i += 1
            case "?":
                flush()
                tokens.append(.anyOne)
                i += 1
            case "\\":
                guard i + 1 < scalars.count else { return nil }
                literal.append(contentsOf: String(scalars[i + 1]).utf8)
                i += 2
            case "[":
                flush()
                guard let (token, next) = GlobPattern.parseSet(scalars, from: i + 1) else { return nil }
                tokens.append(token)
                i = next
            default:
                literal.append(contentsOf: String(c).utf8)
                i += 1
            }
        }
        flush()
        self.tokens = tokens
    }

    /// Parses a set body starting just after `[`; returns the token and the index after `]`.
    private static func parseSet(_ s: [Unicode.Scalar], from start: Int) -> (Token, Int)? {
        var i = start
        var negated = false
        if i < s.count, s[i] == "^" { negated = true; i += 1 }
        var ranges: [ClosedRange<UInt32>] = []
        var members = 0
        /// One member character, honouring `\`; nil when malformed: at the end of the pattern, an
        /// unescaped `-` or `]`, or nothing after it (the set cannot be closed).
        func member() -> Unicode.Scalar? {
            guard i < s.count, s[i] != "-", s[i] != "]" else { return nil }
            if s[i] == "\\" { i += 1 }
            guard i + 1 < s.count else { return nil }
            i += 1
            return s[i - 1]
        }
        while true {
            guard i < s.count else { return nil }  // unterminated
            if s[i] == "]" && members > 0 {
                return (.set(negated: negated, ranges: ranges), i + 1)
            }
            guard let lo = member() else { return nil }
            var hi = lo
            if s[i] == "-" {
                i += 1
                guard let upper = member() else { return nil }
                hi = upper
            }
            // A reversed range is empty, not an error.
            if lo.value <= hi.value { ranges.append(lo.value...hi.value) }
            members += 1
        }
    }

    func matches(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { matches(utf8: $0) }
    }

    func matches(utf8 s: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = s.count
        let m = tokens.count
        var p = 0
        var t = 0
        var starToken = -1
        var starText = 0
        while t < n {
            if p < m {
                switch tokens[p] {
                case .anyRun:
                    starToken = p
                    starText = t
                    p += 1
                    continue
                case .literal(let bytes):
                    if t + bytes.count <= n, GlobPattern.bytesEqual(s, at: t, bytes) {
                        t += bytes.count
                        p += 1
                        continue
                    }
                case .anyOne:
                    t += GlobPattern.scalarLength(s[t])
                    p += 1
                    continue
                case .set(let negated, let ranges):
                    let (value, length) = GlobPattern.decode(s, at: t)
                    var inSet = false
                    for r in ranges where r.contains(value) { inSet = true; break }
                    if inSet != negated {
                        t += length
                        p += 1
                        continue
                    }
                }
            }
            // Mismatch: let the latest `*` swallow one more scalar, or fail.
            guard starToken >= 0 else { return false }
            starText += GlobPattern.scalarLength(s[starText])
            t = starText
            p = starToken + 1
        }
        while p < m, case .anyRun = tokens[p] { p += 1 }
        return p == m
    }

    @inline(__always)
    private static func bytesEqual(_ s: UnsafeBufferPointer<UInt8>, at offset: Int, _ bytes: [UInt8]) -> Bool {
        var k = 0
        while k < bytes.count {
            if s[offset + k] != bytes[k] { return false }
            k += 1
        }
        return true
    }

    /// Byte length of the scalar whose lead byte is `lead` (Swift strings are valid UTF-8).
    @inline(__always)
    private static func scalarLength(_ lead: UInt8) -> Int {
        if lead < 0x80 { return 1 }
        if lead < 0xE0 { return 2 }
        if lead < 0xF0 { return 3 }
        return 4
    }

    @inline(__always)
    private static func decode(_ s: UnsafeBufferPointer<UInt8>, at i: Int) -> (UInt32, Int) {
        let lead = s[i]
        switch scalarLength(lead) {
        case 1: return (UInt32(lead), 1)
        case 2: return ((UInt32(lead & 0x1F) << 6) | UInt32(s[i + 1] & 0x3F), 2)
        case 3: return ((UInt32(lead & 0x0F) << 12) | (UInt32(s[i + 1] & 0x3F) << 6) | UInt32(s[i + 2] & 0x3F), 3)
        default:
            return ((UInt32(lead & 0x07) << 18) | (UInt32(s[i + 1] & 0x3F) << 12) | (UInt32(s[i + 2] & 0x3F) << 6)
                | UInt32(s[i + 3] & 0x3F), 4)
        }
    }
}
