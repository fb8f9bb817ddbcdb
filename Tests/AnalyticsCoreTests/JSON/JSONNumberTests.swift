import Foundation
import Testing
@testable import AnalyticsCore

/// Numbers pass through the host exactly: parse → encode gives back the text that came in.
@Suite struct JSONNumberTests {
    @Test(arguments: [
        "12345678901234567890", "-12345678901234567890", "9007199254740993", "1000000000000000",
        "123456789012345678901234567890123456789", "-0", "0", "-0.0", "1.50", "1.0", "1E3", "1e-7",
        "0.00001", "2.5e+10", "0.30000000000000004", "3.141592653589793238462643383279",
        "19.99", "-0.5", "42", "0.0001", "123456789012345.6",
    ])
    func numberTextSurvivesParseAndEncode(_ text: String) throws {
        #expect(try JSON(parsing: text).serialized() == text)
        let inObject = #"{"n":\#(text),"list":[\#(text),1]}"#
        #expect(try JSON(parsing: inObject).serialized() == inObject)
    }

    @Test func valueIsTheNearestDoubleForComparisons() throws {
        let big = try JSON(parsing: "12345678901234567890")
        #expect(big.doubleValue == 12345678901234567890.0)
        #expect(big.numberValue?.hasExactText == true)
        #expect(try JSON(parsing: "9223372036854775807").intValue == Int.max)
        #expect(try JSON(parsing: "-0").doubleValue?.sign == .minus)
        #expect(JSON.number(-0.0).serialized() == "-0")
        // Equality is numeric; the text is what is written.
        #expect(try JSON(parsing: "1.50") == JSON.number(1.5))
        #expect(try JSON(parsing: "1.50").numberValue?.text == "1.50")
        #expect(Set([try JSON(parsing: "1.50"), JSON.number(1.5), try JSON(parsing: "15e-1")]).count == 1)
    }

    @Test func integersBuiltInCodeAreExact() {
        #expect(JSON(integerLiteral: Int.max).serialized() == "9223372036854775807")
        #expect(JSON(integerLiteral: -1_000_000_000_000_000).serialized() == "-1000000000000000")
        #expect(JSON(integerLiteral: 999_999_999_999_999).serialized() == "999999999999999")
        #expect(JSONNumber(text: "1.50")?.text == "1.50")
        #expect(JSONNumber(text: "1.") == nil)
    }

    /// The parser decides by syntax when the writer reproduces a number; check that decision against
    /// the writer itself on many random decimals and doubles.
    @Test func syntaxShortcutAgreesWithTheWriter() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let intDigits = Int.random(in: 0...16, using: &rng)
            let fracDigits = Int.random(in: 0...16, using: &rng)
            var text = Bool.random(using: &rng) ? "-" : ""
            text += intDigits == 0 ? "0" : String(Int.random(in: 1...9, using: &rng)) + String((1..<intDigits).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
            if fracDigits > 0 {
                let zeros = Int.random(in: 0...fracDigits, using: &rng)
                text += "." + String(repeating: "0", count: zeros) + String((zeros..<fracDigits).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
            }
            let value = try JSON(parsing: text)
            #expect(value.serialized() == text, "\(text)")
            guard case .number(let n) = value else { Issue.record("not a number: \(text)"); continue }
            // Kept text only when the writer's own spelling differs.
            #expect(n.hasExactText == (JSONNumber.canonicalText(n.value) != text), "\(text)")
        }
        for _ in 0..<20_000 {
            let d = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng))
            guard d.isFinite else { continue }
            let written = JSON.number(d).serialized()
            let back = try JSON(parsing: written)
            #expect(back.doubleValue?.bitPattern == d.bitPattern, "\(written)")
            #expect(back.numberValue?.hasExactText == false, "\(written)")
        }
    }

    @Test func filtersCompareExactNumbersByValue() throws {
        let payload = try JSON(parsing: #"{"type":"track","event":"E","properties":{"id":12345678901234567890,"z":-0}}"#)
        guard case .object(let event) = payload else { Issue.record("not an object"); return }
        func matches(_ ir: String) throws -> Bool {
            let compiled = try FilterExpressionCompiler.compile(try JSON(parsing: ir))
            return compiled.truthy(event)
        }
        #expect(try matches(#"["=","properties.id",{"value":12345678901234567000}]"#))
        #expect(try matches(#"[">","properties.id",{"value":12345678901234566000}]"#))
        #expect(try matches(#"["=","properties.z",{"value":0}]"#))
    }
}
