import Foundation
import Testing
@testable import AnalyticsCore

/// The JSON text every destination of a fanned-out event reads: written once, published without a
/// lock, the same for every reader.
@Suite struct SharedEncodingTests {
    static func event(_ n: Int) -> Event {
        var e = try! Event(payload: ["type": "track", "event": .string("E\(n)"), "messageId": .string("m-\(n)"),
                                     "properties": ["n": .number(JSONNumber(n)), "s": "text with \"quotes\" and é"]])
        e.shareEncoding()
        return e
    }

    @Test func threadsReadingOneEventAtOnceAllGetItsOneText() {
        let events = (0..<200).map(Self.event)
        let expected = events.map { $0.payload.serializedBytes() }
        let seen = Locked<[[[UInt8]]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var mine: [[UInt8]] = []
            for e in events {
                // Half through the borrowing read, half through the array (as a Segment.io worker does).
                mine.append(worker % 2 == 0 ? e.withSerializedBytes { [UInt8]($0) } : e.serializedBytes)
            }
            seen.withLock { $0.append(mine) }
        }
        let all = seen.withLock { $0 }
        #expect(all.count == 8)
        for texts in all { #expect(texts == expected) }
        // Once published, the text is the one every copy shares.
        #expect(events.allSatisfy { $0.computedSerializedCount != nil })
    }

    @Test func anEditedCopyIsWrittenFromItsOriginalsTextAndMatchesAFreshEncoding() {
        let original = Self.event(7)
        _ = original.serializedBytes
        var edited = original
        edited.payload["properties"] = ["n": 7]
        edited.deriveEncoding(from: original)
        #expect(edited.withSerializedBytes { [UInt8]($0) } == edited.payload.serializedBytes())
        #expect(edited.serializedBytes == edited.payload.serializedBytes())
    }

    /// Fan-out's encoding holds the payload and no one has written its text yet: a destination
    /// filter's edited copy still derives its text from it (the text is needed by the other
    /// readers anyway), rather than writing the whole event again.
    @Test func anEditedCopyOfAnEventWhoseSharedTextIsNotYetWrittenDerivesItsText() {
        var original = Self.event(8)
        original.encoding = nil
        let made = original.shareEncodingHoldingPayload()
        #expect(made)
        #expect(original.computedSerializedCount == nil)
        var edited = original
        edited.payload["properties"] = ["n": 8, "added": true]
        edited.deriveEncoding(from: original)
        #expect(edited.encoding != nil, "derived, not left to a full encoding")
        #expect(original.computedSerializedCount == original.payload.serializedBytes().count)
        #expect(edited.withSerializedBytes { [UInt8]($0) } == edited.payload.serializedBytes())
    }

    /// `SharedEncoding.publishedText(at:)` reads an event's optional encoding as one pointer.
    @Test func anOptionalEncodingIsOnePointerWideAndNilAsZero() {
        #expect(MemoryLayout<SharedEncoding?>.size == MemoryLayout<UnsafeRawPointer>.size)
        let plain = try! Event(payload: ["type": "track", "event": "E"])
        #expect(plain.withSerializedBytes { [UInt8]($0) } == plain.payload.serializedBytes())
        var shared = plain
        shared.shareEncoding()
        #expect(shared.computedSerializedCount == nil)
        shared.computeSharedEncoding()
        #expect(shared.computedSerializedCount == plain.payload.serializedBytes().count)
        #expect(shared.withSerializedBytes { [UInt8]($0) } == plain.payload.serializedBytes())
    }
}
