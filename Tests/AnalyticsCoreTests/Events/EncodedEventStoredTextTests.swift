import Foundation
import Testing
@testable import AnalyticsCore

/// A durable queue's record handed to a destination that takes text: the stored bytes as they
/// are, with the type read from the text; anything the scan does not find plainly goes to the
/// parser instead (nil here).
@Suite struct EncodedEventStoredTextTests {
    static func encoded(_ text: String) -> EncodedEvent? { EncodedEvent(storedText: ArraySlice(Array(text.utf8))) }

    static func text(of event: EncodedEvent) -> String { event.withText { String(decoding: $0, as: UTF8.self) } }

    @Test func theStoredTextIsHandedOnAsItIsWithItsType() throws {
        let stored = #"{"messageId":"m-1","properties":{"type":"not this one","n":1},"type":"track","event":"Café ☕"}"#
        let event = try #require(Self.encoded(stored))
        #expect(event.type == .track)
        #expect(Self.text(of: event) == stored, "the same bytes")
        // Values when something needs them after all.
        #expect(event.event.payload["event"] == "Café ☕")
        #expect(event.event.type == .track)
        for type in EventType.allCases {
            #expect(Self.encoded(#"{ "type" : "\#(type.rawValue)" , "userId":"u"}"#)?.type == type)
        }
    }

    @Test func whatIsNotPlainlyAnEventIsLeftToTheParser() {
        #expect(Self.encoded(#"{"type":"purchase"}"#) == nil, "an unknown type")
        #expect(Self.encoded(#"{"event":"x"}"#) == nil, "no type")
        #expect(Self.encoded(#"{"type":1}"#) == nil, "not a string")
        #expect(Self.encoded(#"{"t\u0079pe":"track"}"#) == nil, "an escaped key")
        #expect(Self.encoded(#"{"type":"tr\u0061ck"}"#) == nil, "an escaped value")
        #expect(Self.encoded(#"["type","track"]"#) == nil, "not an object")
        #expect(Self.encoded(#"{"type":"track""#) == nil, "cut short")
        #expect(Self.encoded("") == nil)
        #expect(Self.encoded(#"{"types":"x","typ":"track"}"#) == nil, "other keys")
    }
}
