import Testing
@testable import AnalyticsCore

/// A replacement read against the event it replaces must give exactly what reading it alone
/// gives (values, key order, number spellings), whatever was changed, added, removed or moved.
@Suite struct JSONDerivedParserTests {
    static let base = #"{"type":"track","event":"Product Viewed","properties":{"product_did":"p-123","price":19.99,"# +
        #""currency":"USD","quantity":2,"big":12345678901234567890,"exact":1.50,"list":[1,{"a":"b"},"x\"y"]},"# +
        #""anonymousId":"a-1","messageId":"m-1","timestamp":"2026-11-23T21:05:31.123Z","integrations":{},"# +
        #""context":{"app":{"name":"bench","version":"1.0"},"device":{"type":"linux","advertisingId":"ad-1","model":"x86_64"},"# +
        #""locale":"en-US","é\n":"\u0001\\"}}"#

    /// Both ways of reading `text`, checked to agree to the byte.
    static func check(_ text: String, against originalText: String = base, repeatedKeys: Bool = false,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let original = try JSON(parsing: originalText).objectValue!
        let originalBytes = original.serializedBytes()
        let plain = Result { () throws(JSONParseError) -> JSON in try JSON(parsing: text) }
        var copy = text
        let derived = copy.withUTF8 { t in
            originalBytes.withUnsafeBufferPointer { JSON.parseObject(t, derivedFrom: original, originalText: $0) }
        }
        switch (plain, derived) {
        case (.success(let value), .success(let object)):
            #expect((object == nil) == (value.objectValue == nil), sourceLocation: sourceLocation)
            if let (object, unchanged) = object {
                #expect(Self.sameInOrder(.object(object), value), "\(object.serialized()) vs \(value.serialized())",
                        sourceLocation: sourceLocation)
                // A repeated key counts as a change even where the last value is the original's.
                if unchanged || !repeatedKeys {
                    #expect(unchanged == Self.sameInOrder(value, .object(original)), "\(text) from \(originalText)",
                            sourceLocation: sourceLocation)
                }
                if unchanged { #expect(object.serialized() == JSONObject.serialized(original)(), sourceLocation: sourceLocation) }
            }
        case (.failure(let a), .failure(let b)):
            #expect(a.offset == b.offset, "\(a) vs \(b)", sourceLocation: sourceLocation)
        default:
            Issue.record("plain: \(plain), derived: \(derived) for \(text)", sourceLocation: sourceLocation)
        }
    }

    /// Equal with keys in the same order at every level; numbers by value (a number the plugin
    /// did not change keeps the original's spelling, e.g. `19.99` for JavaScript's `19.990`).
    static func sameInOrder(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.keys == y.keys && zip(x.values, y.values).allSatisfy { sameInOrder($0, $1) }
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameInOrder($0, $1) }
        default:
            return a == b
        }
    }

    @Test func unchangedAndSeedEdits() throws {
        let original = try JSON(parsing: Self.base)
        try Self.check(original.serialized())
        // FixProductViewed: one key removed, one added at the end of properties.
        var fixed = original
        var properties = fixed["properties"]!.objectValue!
        properties["product_id"] = properties["product_did"]
        properties["product_did"] = nil
        fixed["properties"] = .object(properties)
        try Self.check(fixed.serialized())
        // RemoveAdvertisingId: a nested key in the middle removed.
        var removed = original
        var context = removed["context"]!.objectValue!
        var device = context["device"]!.objectValue!
        device["advertisingId"] = nil
        context["device"] = .object(device)
        removed["context"] = .object(context)
        try Self.check(removed.serialized())
        // JavaScript's spelling of the same numbers: unchanged, the original's text kept.
        try Self.check(Self.base.replacingOccurrences(of: "12345678901234567890", with: "12345678901234567000")
            .replacingOccurrences(of: "1.50", with: "1.5"))
        // The C enrichment fixture: a member added at the end.
        try Self.check(String(Self.base.dropLast()) + #","enriched":true}"#)
    }

    @Test(arguments: [
        // members added first, in the middle, changed to another kind, reordered
        #"{"new":1,"type":"track","event":"Product Viewed","anonymousId":"a-1"}"#,
        #"{"type":"track","event":"Changed","properties":{"price":19.990,"quantity":2.0,"big":12345678901234567891},"anonymousId":"a-1"}"#,
        #"{"event":"Product Viewed","type":"track","anonymousId":"a-1","properties":[1,2]}"#,
        // duplicates, of original keys and of added ones
        #"{"type":"track","event":"Product Viewed","type":"identify","x":1,"x":2,"anonymousId":"a-1"}"#,
        #"{"x":1,"type":"track","event":"Product Viewed","anonymousId":"a-1","x":{"a":1}}"#,
        // spaces, escapes spelled otherwise, numbers spelled otherwise
        #"{ "type" : "track" , "event":"Product\u0020Viewed","anonymousId":"a\/1","integrations":{ },"properties":{"price":1.999e1}}"#,
        // a number that only starts like the original one, a literal in place of a string
        #"{"type":"track","event":"Product Viewed","properties":{"product_did":"p-123","price":19.991},"anonymousId":null}"#,
        // not objects, malformed
        #"[1,2]"#, #""text""#, #"{"type":"track","event":"Product Viewed""#, #"{"type":"track",}"#,
        #"{"type":"track","event":"Product Viewed","properties":{"product_did":"p-123","price":19.99,"#,
    ])
    func editedTexts(_ text: String) throws {
        try Self.check(text)
    }

    /// Changes at every place in the original's text, and deletions of every member.
    @Test func everyMemberChangedOrRemovedAndTheTextCut() throws {
        let original = try JSON(parsing: Self.base)
        func variants(of value: JSON, path: [String]) -> [JSON] {
            guard case .object(let object) = value else { return [] }
            var out: [JSON] = []
            for key in object.keys {
                var removed = object
                removed[key] = nil
                out.append(.object(removed))
                var changed = object
                changed[key] = "changed"
                out.append(.object(changed))
                var moved = object
                let v = moved.removeValue(forKey: key)!
                moved[key] = v
                out.append(.object(moved))
                for inner in variants(of: object[key]!, path: path + [key]) {
                    var nested = object
                    nested[key] = inner
                    out.append(.object(nested))
                }
            }
            return out
        }
        for variant in variants(of: original, path: []) { try Self.check(variant.serialized()) }
        let text = original.serialized()
        for cut in stride(from: 1, to: text.utf8.count, by: 7) {
            try Self.check(String(decoding: Array(text.utf8.prefix(cut)), as: UTF8.self))
        }
    }

    /// Many random objects, each edited at random and compared both ways (seeded: repeatable).
    @Test func randomEdits() throws {
        var rng = SplitMix(seed: 0x5EED)
        for _ in 0..<300 {
            let original = JSON.object(Self.randomObject(&rng, depth: 0))
            var edited = original
            for _ in 0..<Int(rng.next() % 4) { edited = Self.edit(edited, &rng, depth: 0) }
            var text = edited.serialized()
            // Text the writer would not write: a repeated key, spaces.
            var repeated = false
            if rng.next() % 3 == 0, let r = text.range(of: "{\"") {
                text.replaceSubrange(r, with: "{\"a0\":7,\"")
                repeated = true
            }
            if rng.next() % 4 == 0, let r = text.range(of: ",") { text.replaceSubrange(r, with: " , ") }
            try Self.check(text, against: original.serialized(), repeatedKeys: repeated)
        }
    }

    /// The context of an event that a plugin left alone is the event's own object, not a copy:
    /// it is still recognised as the pre-encoded context when written.
    @Test func unchangedMembersAreShared() throws {
        let original = try JSON(parsing: Self.base).objectValue!
        let bytes = original.serializedBytes()
        var text = String(Self.base.dropLast()) + #","enriched":true}"#
        let derived = try text.withUTF8 { t in
            try bytes.withUnsafeBufferPointer { try JSON.parseObject(t, derivedFrom: original, originalText: $0).get() }
        }!.object
        func identity(_ o: JSONObject) -> UInt { o.storage.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(identity(derived["context"]!.objectValue!) == identity(original["context"]!.objectValue!))
        #expect(identity(derived["properties"]!.objectValue!) == identity(original["properties"]!.objectValue!))
        #expect(derived["properties"]?["big"]?.numberValue?.text == "12345678901234567890")
        #expect(derived["properties"]?["exact"]?.numberValue?.text == "1.50")
    }

    // MARK: Random objects

    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let keys = ["a", "b", "type", "event", "properties", "context", "ключ", "k\"q", "long-key-name-over-fifteen-bytes", "n"]

    static func randomValue(_ rng: inout SplitMix, depth: Int) -> JSON {
        switch rng.next() % (depth < 3 ? 9 : 6) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .number(JSONNumber(Int(rng.next() % 2000) - 1000))
        case 3: return .number(Double(rng.next() % 100_000) / 100)
        case 4: return (try? JSON(parsing: ["12345678901234567890", "1.50", "1e3", "-0", "0.1"].randomElement(using: &rng)!)) ?? .null
        case 5: return .string(["", "x", "p-123", "é😀", "line\nbreak", "quote\"", "\u{1}"].randomElement(using: &rng)!)
        case 6, 7: return .object(randomObject(&rng, depth: depth + 1))
        default: return .array((0..<Int(rng.next() % 4)).map { _ in randomValue(&rng, depth: depth + 1) })
        }
    }

    static func randomObject(_ rng: inout SplitMix, depth: Int) -> JSONObject {
        var o = JSONObject()
        for _ in 0..<Int(rng.next() % (depth == 0 ? 20 : 6)) { o[keys.randomElement(using: &rng)! + String(rng.next() % 3)] = randomValue(&rng, depth: depth) }
        return o
    }

    static func edit(_ value: JSON, _ rng: inout SplitMix, depth: Int) -> JSON {
        guard case .object(var o) = value else { return randomValue(&rng, depth: depth) }
        let keys = o.keys
        switch rng.next() % 5 {
        case 0 where !keys.isEmpty: o[keys.randomElement(using: &rng)!] = nil
        case 1: o[Self.keys.randomElement(using: &rng)! + "x"] = randomValue(&rng, depth: depth)
        case 2 where !keys.isEmpty:
            let k = keys.randomElement(using: &rng)!
            o[k] = edit(o[k]!, &rng, depth: depth + 1)
        case 3 where !keys.isEmpty:
            let k = keys.randomElement(using: &rng)!
            let v = o.removeValue(forKey: k)!
            o[k] = v
        default:
            if let k = keys.randomElement(using: &rng) { o[k] = randomValue(&rng, depth: depth) }
        }
        return .object(o)
    }
}
