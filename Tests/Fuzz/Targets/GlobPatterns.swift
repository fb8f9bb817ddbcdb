// The `match` glob on arbitrary patterns and texts (input: pattern, a NUL byte, text; without a
// NUL the input is both). Properties: compiling never crashes; the linear matcher agrees with a
// plain dynamic-programming matcher over the same compiled tokens; a pattern that escapes every
// character of a text matches exactly that text; `*` matches everything.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/Glob.dict -max_len=4096
@testable import AnalyticsCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGlobPatterns(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    let (patternBytes, textBytes) = fuzzSplit(input, at: 0)
    let pattern = String(decoding: patternBytes, as: UTF8.self)
    let text = String(decoding: textBytes ?? patternBytes, as: UTF8.self)

    if let glob = GlobPattern(pattern) {
        let fast = glob.matches(text)
        if let slow = referenceMatch(glob.tokens, Array(text.unicodeScalars)) {
            fuzzCheck(fast == slow, "pattern \(pattern.debugDescription) on \(text.debugDescription): matcher says \(fast), reference \(slow)")
        }
    }

    var escaped = ""
    for scalar in text.unicodeScalars { escaped.unicodeScalars.append("\\"); escaped.unicodeScalars.append(scalar) }
    guard let exact = GlobPattern(escaped) else { fuzzFail("an all-escaped pattern does not compile: \(escaped.debugDescription)") }
    fuzzCheck(exact.matches(text), "an all-escaped pattern does not match its own text \(text.debugDescription)")
    fuzzCheck(!exact.matches(text + "x") && (text.isEmpty || !exact.matches(String(text.unicodeScalars.dropLast()))),
              "an all-escaped pattern matches more than its own text \(text.debugDescription)")
    fuzzCheck(GlobPattern("*")?.matches(text) == true, "* does not match \(text.debugDescription)")
    return 0
}

/// Whether `tokens` match all of `text`, by dynamic programming over (token, scalar) positions;
/// nil when the table would be too large to be quick.
private func referenceMatch(_ tokens: [GlobPattern.Token], _ text: [Unicode.Scalar]) -> Bool? {
    let m = tokens.count, n = text.count
    guard (m + 1) * (n + 1) <= 400_000 else { return nil }
    // reach[p][t]: the first p tokens can match the first t scalars.
    var reach = [[Bool]](repeating: [Bool](repeating: false, count: n + 1), count: m + 1)
    reach[0][0] = true
    for p in 0..<m {
        if case .anyRun = tokens[p] {
            // From the first reachable position on, a run reaches everything.
            if let first = reach[p].firstIndex(of: true) { for u in first...n { reach[p + 1][u] = true } }
            continue
        }
        for t in 0...n where reach[p][t] {
            switch tokens[p] {
            case .anyRun:
                break
            case .anyOne:
                if t < n { reach[p + 1][t + 1] = true }
            case .set(let negated, let ranges):
                if t < n, ranges.contains(where: { $0.contains(text[t].value) }) != negated { reach[p + 1][t + 1] = true }
            case .literal(let bytes):
                let scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
                if t + scalars.count <= n, Array(text[t..<(t + scalars.count)]) == scalars { reach[p + 1][t + scalars.count] = true }
            }
        }
    }
    return reach[m][n]
}
