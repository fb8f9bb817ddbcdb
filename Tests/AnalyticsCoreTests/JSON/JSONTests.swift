import Testing
@testable import AnalyticsCore

@Suite struct JSONTests {
    @Test func roundTripKeepsOrderAndUnknownFields() throws {
        let text = #"{"z":1,"a":[true,false,null,{"k":"v"}],"s":"q\"\\\n\u00e9\ud83d\ude00","n":-0.5,"big":12345678901234,"e":1.5e-7}"#
        let value = try JSON(parsing: text)
        #expect(value["z"] == 1)
        #expect(value["s"]?.stringValue == "q\"\\\né😀")
        #expect(value.objectValue?.keys == ["z", "a", "s", "n", "big", "e"])
        let again = try JSON(parsing: value.serialized())
        #expect(again == value)
        #expect(value.serialized().hasPrefix(#"{"z":1,"a":[true,false,null,{"k":"v"}],"s":"q\"\\\n"#))
        #expect(JSON.number(12345678901234).serialized() == "12345678901234")
        #expect(JSON.number(0.1).serialized() == "0.1")
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "tru", "\"abc", "01x", "1.", "-", "{\"a\":1}}", "\"\u{01}\"", "\"\\x\""])
    func malformedTextIsAnErrorWithOffset(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSON(parsing: text) }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSON(parsing: deep) }
    }

    @Test func duplicateKeysLastWins() throws {
        #expect(try JSON(parsing: #"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test func pathLookupIndexesArrays() throws {
        let v = try JSON(parsing: #"{"products":[{"price":3},{"price":4}]}"#)
        #expect(v[path: "products.1.price"] == 4)
        #expect(v[path: "products.2.price"] == nil)
    }

    @Test func objectEqualityIgnoresOrderButTextDoesNot() {
        let a: JSON = ["x": 1, "y": 2]
        let b: JSON = ["y": 2, "x": 1]
        #expect(a == b)
        #expect(a.serialized() != b.serialized())
        #expect(Set([a, b]).count == 1)
    }

    @Test func timestampAndMessageIdShapes() {
        #expect(ISOTimestamp.format(seconds: 1_795_000_000, milliseconds: 7) == "2026-11-18T11:06:40.007Z")
        let id = MessageID.make()
        #expect(id.count == 36)
        #expect(UUIDShape.matches(id))
    }
}

enum UUIDShape {
    static func matches(_ s: String) -> Bool {
        let parts = s.split(separator: "-")
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts[2].first == "4"
    }
}

@Suite struct JSONEscapingTests {
    /// Every special byte at every offset of a 8-byte word (the writer scans 8 bytes at a time).
    @Test func specialsAtEveryOffsetRoundTrip() throws {
        let specials: [Character] = ["\"", "\\", "\n", "\u{01}", "\u{1F}", "\t", "é", "😀", "\u{7F}"]
        for special in specials {
            for offset in 0..<20 {
                let text = String(repeating: "a", count: offset) + String(special) + String(repeating: "b", count: 23 - offset % 7)
                let value: JSON = ["k\(special)": .string(text), "list": [.string(text), .string(String(special))]]
                let encoded = value.serialized()
                #expect(try JSON(parsing: encoded) == value, "\(encoded)")
                #expect(!encoded.unicodeScalars.contains { $0.value < 0x20 }, "control bytes are escaped")
            }
        }
        #expect(JSON.string("\u{01}").serialized() == #""\u0001""#)
        #expect(JSON.string("").serialized() == #""""#)
    }
}

@Suite struct JSONUTF8Tests {
    /// JSON text is UTF-8 (RFC 8259 §8.1): bad bytes in a string are an error at their offset,
    /// never replaced by U+FFFD.
    @Test(arguments: [
        ([0x22, 0x61, 0xFF, 0x22], 2),                         // not a UTF-8 byte
        ([0x22, 0xC0, 0x80, 0x22], 1),                         // overlong NUL
        ([0x22, 0x61, 0xED, 0xA0, 0x80, 0x22], 2),             // encoded surrogate
        ([0x22, 0xE2, 0x82, 0x22], 1),                         // truncated sequence
        ([0x22, 0x5C, 0x6E, 0x62, 0xF5, 0x80, 0x80, 0x80, 0x22], 4),  // after an escape
        ([0x7B, 0x22, 0x6B, 0xFF, 0x22, 0x3A, 0x31, 0x7D], 3),  // in a key
    ] as [([UInt8], Int)])
    func invalidUTF8IsAnErrorAtItsByte(_ bytes: [UInt8], _ offset: Int) {
        #expect {
            try JSON(parsing: bytes)
        } throws: { error in
            guard let e = error as? JSONParseError else { return false }
            return e.offset == offset && e.message.hasPrefix("not valid UTF-8")
        }
    }

    @Test func validMultiByteTextIsKept() throws {
        let text = "\"é😀\\n中文\""
        #expect(try JSON(parsing: Array(text.utf8)) == .string("é😀\n中文"))
    }

    @Test func errorsInMultiLineTextsNameLineAndColumn() {
        #expect {
            try JSON(parsing: "{\n  \"a\": 1,\n  \"é\": tru\n}")
        } throws: { error in
            guard let e = error as? JSONParseError else { return false }
            return e.line == 3 && e.column == 8 && e.offset == 20 && e.description.hasPrefix("invalid JSON at line 3, column 8: ")
        }
    }
}
