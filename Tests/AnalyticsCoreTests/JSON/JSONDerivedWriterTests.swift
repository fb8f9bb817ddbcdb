import Testing
@testable import AnalyticsCore

/// The writer that copies an edited event's unchanged members from the text it already has must
/// give exactly the bytes a full encoding gives, whatever the edit.
@Suite struct JSONDerivedWriterTests {
    static let original = try! JSON(parsing: #"""
        {"type":"track","event":"Order \"Completed\"","big":12345678901234567890,"neg":-0,"f":1.50,
         "properties":{"coupon":"SPRING","total":42.5,"nested":{"a":[1,{"b":"\u0001é😀"}],"c":null},"list":[true,false]},
         "context":{"app":{"name":"x","build":"1"},"ip":"10.0.0.1"},"ké\\y":"v","empty":{},"arr":[]}
        """#).objectValue!

    /// Every edit a transformer can make: drop, keep, replace, add, reorder, nested changes.
    static let edits: [(String, @Sendable (inout JSONObject) -> Void)] = [
        ("drop a property", { $0.modifyProperties { $0["coupon"] = nil } }),
        ("drop a top-level member", { $0["big"] = nil }),
        ("drop the first member", { $0["type"] = nil }),
        ("drop the last member", { $0["arr"] = nil }),
        ("replace a scalar", { $0["neg"] = .number(JSONNumber(3)) }),
        ("replace a nested value", { $0.modifyProperties { p in
            guard case .object(var n)? = p["nested"] else { return }
            n["c"] = "now a string"
            p["nested"] = .object(n)
        } }),
        ("add a member", { $0["added"] = ["x": 1] }),
        ("add a nested member", { $0.modifyProperties { $0["new \"one\""] = .array([1, 2]) } }),
        ("escaped key dropped", { $0["ké\\y"] = nil }),
        ("object becomes an array", { $0["empty"] = .array([]) }),
        ("everything removed", { $0 = JSONObject() }),
        ("reordered", { o in let v = o["type"]!; o["type"] = nil; o["type"] = v }),
        ("nothing changed", { _ in }),
    ]

    @Test(arguments: 0..<edits.count)
    func derivedTextEqualsAFullEncoding(_ index: Int) {
        let (name, edit) = Self.edits[index]
        let text = Self.original.serializedBytes()
        var edited = Self.original
        edit(&edited)
        #expect(edited.serializedBytes(derivedFrom: Self.original, text: text) == edited.serializedBytes(), "\(name)")
    }

    @Test func scannerFindsEveryMemberOfTheWritersText() {
        let text = Self.original.serializedBytes()
        let members = text.withUnsafeBufferPointer { JSONMemberScanner.members(of: $0) }
        #expect(members?.count == Self.original.count)
        let spaced = Array("{ \"a\" : [1, {\"b\": \"}\\\"\"}] ,\"c\":-1.5e3 }".utf8)
        let found = spaced.withUnsafeBufferPointer { JSONMemberScanner.members(of: $0) }
        #expect(found.map { $0.map { String(decoding: spaced[$0.valueStart..<$0.valueEnd], as: UTF8.self) } }
                == [#"[1, {"b": "}\""}]"#, "-1.5e3"])
    }

    /// The client's context is written from its pre-encoded text; the derived writer steps over
    /// it by that length instead of scanning it, and the result is still exact.
    @Test func preEncodedContextIsSteppedOverExactly() throws {
        var original = Self.original
        let fragment = PreEncodedObject(original["context"]!.objectValue!)
        original["context"] = .object(fragment.object)
        PreEncodedObject.register(fragment)
        let text = original.serializedBytes()
        for (name, edit) in Self.edits {
            var edited = original
            edit(&edited)
            #expect(edited.serializedBytes(derivedFrom: original, text: text) == edited.serializedBytes(), "\(name)")
        }
    }

    @Test func unreadableBaseTextFallsBackToAFullEncoding() {
        var edited = Self.original
        edited["big"] = nil
        for broken in ["", "[1]", "{\"type\":", "{\"a\":1}", "{\"a\":1,}"] {
            #expect(edited.serializedBytes(derivedFrom: Self.original, text: Array(broken.utf8)) == edited.serializedBytes(), "\(broken)")
        }
    }

    /// A destination filter's drop_properties result carries a derived encoding: its text has the
    /// property removed and is exactly the full encoding of the edited payload.
    @Test func filterResultTextIsDerivedAndExact() throws {
        let rules = RoutingRules(settings: FilterFixture.settings(rules: [FilterFixture.always(
            [["type": "drop_properties", "config": ["drop": ["properties": ["coupon"], "properties.nested": ["c"]]]]])]))
        var event = try Event(payload: Self.original)
        event.shareEncoding()
        let before = event.serializedBytes
        guard case .kept(let out) = rules.filter(forDestination: "D").apply(event) else {
            Issue.record("the rule dropped the event")
            return
        }
        #expect(out.encoding != nil)
        let text = out.serializedBytes
        #expect(text == out.payload.serializedBytes())
        #expect(text != before && !String(decoding: text, as: UTF8.self).contains("coupon"))
        #expect(event.serializedBytes == before)  // the original's text is untouched
    }
}

private extension JSONObject {
    mutating func modifyProperties(_ body: (inout JSONObject) -> Void) {
        guard case .object(var p)? = self["properties"] else { return }
        body(&p)
        self["properties"] = .object(p)
    }
}
