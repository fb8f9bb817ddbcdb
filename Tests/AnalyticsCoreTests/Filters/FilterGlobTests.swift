import Testing
@testable import AnalyticsCore

@Suite struct FilterGlobTests {
    static let cases: [(String, String, Bool)] = [
        ("Order *", "Order Completed", true),
        ("Order *", "Order ", true),
        ("Order *", "Order", false),
        ("*", "", true),
        ("", "", true),
        ("", "a", false),
        ("abc", "abc", true),
        ("abc", "abcd", false),  // anchored at both ends
        ("a*b*c", "aXXbYYc", true),
        ("a*b*c", "aXXbYY", false),
        ("***a", "bba", true),
        ("*a", "bab", false),
        // `*` crosses `/`
        ("a*c", "a/b/c", true),
        ("*/*", "a/b/c", true),
        ("/api/*", "/api/v1/users", true),
        // `?` is exactly one Unicode scalar
        ("?", "a", true),
        ("?", "", false),
        ("?", "ab", false),
        ("?", "é", true),
        ("?", "😀", true),
        ("??", "😀", false),
        ("Order ?ompleted", "Order Completed", true),
        // sets and ranges
        ("[a-c]x", "bx", true),
        ("[a-c]x", "dx", false),
        ("[abc]", "c", true),
        ("[a-cx-z]", "y", true),
        ("[^a-c]x", "dx", true),
        ("[^a-c]x", "bx", false),
        // Only `^` negates (Go's path.Match): `[!…]` is a set that contains `!`.
        ("[!a-c]x", "bx", true),
        ("[!a-c]x", "!x", true),
        ("[!a-c]x", "dx", false),
        ("[!O]", "!", true),
        ("[!O]", "O", true),
        ("[!O]", "X", false),
        ("[!]", "!", true),
        ("[^!]", "a", true),
        ("[^!]", "!", false),
        ("[^a-c]x", "😀x", true),
        // A reversed range is empty, not malformed.
        ("[z-a]", "m", false),
        ("[z-a]", "a", false),
        ("[^z-a]", "m", true),
        ("x[z-ab]", "xb", true),
        ("*[z-a]*", "anything", false),
        ("[é-ü]", "ö", true),
        ("[é-ü]", "e", false),
        ("[😀]", "😀", true),
        ("[\\-a]", "-", true),
        ("[a\\-]", "-", true),
        ("[[]", "[", true),
        ("[\\]]", "]", true),
        ("[\\^a]", "^", true),
        ("]", "]", true),
        // escapes
        ("\\*", "*", true),
        ("\\*", "a", false),
        ("a\\?", "a?", true),
        ("a\\?", "ab", false),
        ("\\[a]", "[a]", true),
        ("\\\\", "\\", true),
        // non-ASCII literals
        ("Ünï*", "Ünïcode", true),
        ("*code", "Ünïcode", true),
        ("日本*", "日本語", true),
        ("*語", "日本語", true),
        ("日?語", "日本語", true),
    ]

    @Test func globSemantics() {
        for (pattern, text, expected) in Self.cases {
            let glob = GlobPattern(pattern)
            #expect(glob != nil, "pattern \(pattern) should compile")
            #expect(glob?.matches(text) == expected, "\(pattern) vs \(text)")
        }
    }

    @Test(arguments: ["[abc", "[", "[]", "[^]", "abc\\", "[a-\\", "[\\", "x[a-", "[O-]", "[a-]", "[-a]", "[a-c-e]", "x*[O-]*",
                      "[]a]", "[a"])
    func malformedPatternsDoNotCompileAndNeverMatch(_ pattern: String) throws {
        #expect(GlobPattern(pattern) == nil)
        // Through the language: malformed means false, never a crash, never a rule problem.
        let event = try Event(payload: ["type": "track", "event": "e", "properties": ["pattern": .string(pattern)]])
        let literalGlob = JSON.array(["match", "properties.pattern", ["value": .string(pattern)]]).serialized()
        let globFromEvent = JSON.array(["match", "properties.pattern", "properties.pattern"]).serialized()
        for ir in [literalGlob, globFromEvent] {
            let (matched, problems) = FilterFixture.matches(ir, event)
            #expect(!matched)
            #expect(problems.isEmpty)
        }
    }

    @Test func pathologicalPatternStaysLinearish() {
        let text = String(repeating: "a", count: 5_000)
        let glob = GlobPattern(String(repeating: "*a", count: 40) + "b")!
        #expect(!glob.matches(text))
        #expect(GlobPattern(String(repeating: "*a", count: 40))!.matches(text))
    }
}
