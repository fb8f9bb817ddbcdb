import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct UploadBatchTests {
    @Test func gzipRoundTripsAndRefusesGarbage() throws {
        let text = Array(String(repeating: #"{"type":"track","event":"E"},"#, count: 1000).utf8)
        let z = GzipCompressor()
        let packed = try z.compress(text)
        #expect(packed.count < text.count / 10)
        #expect(packed.prefix(2) == [0x1F, 0x8B])  // gzip magic
        #expect(try Gzip.decompress(packed) == text)
        // The compressor is reusable.
        #expect(try Gzip.decompress(try z.compress(Array("again".utf8))) == Array("again".utf8))
        #expect(throws: GzipError.self) { try Gzip.decompress(Array("not gzip at all".utf8)) }
        #expect(throws: GzipError.self) { try Gzip.decompress(Array(packed.prefix(packed.count / 2))) }
        #expect(throws: GzipError.self) { try Gzip.decompress(packed, limit: 100) }
    }

    /// The upload path compresses the batch and its per-attempt tail as pieces, into a buffer
    /// the compressor keeps: the result is the gzip of the whole body, every time.
    @Test func compressedBodyIsTheGzipOfTheBody() throws {
        let z = GzipCompressor()
        var spare: [UInt8] = Array(repeating: 0x7A, count: 3 << 20)  // an earlier, larger batch's storage
        for round in 0..<3 {
            var b = BatchBuilder(writeKey: "k", reusing: &spare)
            #expect(spare.isEmpty)
            for i in 0..<(round == 1 ? 2_000 : 3) { #expect(try b.append(Array(#"{"n":\#(i),"r":\#(round)}"#.utf8))) }
            let batch = b.finish()
            let sentAt = "2026-11-22T10:00:00.12\(round)Z"
            #expect(try Gzip.decompress(try batch.compressedBody(with: z, sentAt: sentAt)) == batch.body(sentAt: sentAt))
            spare = batch.head
        }
        #expect(try Gzip.decompress(try z.compress(pieces: [])) == [])
    }

    @Test func bodyIsTheEnvelopeAroundTheEventBytes() throws {
        var b = BatchBuilder(writeKey: "key\"1")
        #expect(try b.append(Array(#"{"a":1}"#.utf8)))
        #expect(try b.append(Array(#"{"b":2}"#.utf8)))
        let batch = b.finish()
        #expect(b.isEmpty)
        #expect(batch.eventCount == 2)
        let body = String(decoding: batch.body(sentAt: "2026-11-22T10:00:00.123Z"), as: UTF8.self)
        #expect(body == #"{"batch":[{"a":1},{"b":2}],"sentAt":"2026-11-22T10:00:00.123Z","writeKey":"key\"1"}"#)
        #expect(batch.bodySize == body.utf8.count)
        let parsed = try JSON(parsing: batch.body())
        #expect(parsed["writeKey"] == "key\"1")
        #expect(parsed["sentAt"]?.stringValue?.count == 24)
    }

    @Test func oversizedEventIsRejectedWithAnErrorAndOthersStillGo() throws {
        let big = TestEvents.track(index: 1, size: BatchLimits.maxEventBytes + 1)
        #expect(throws: BatchEventError(reason: .tooLarge(size: big.count, limit: BatchLimits.maxEventBytes))) {
            try BatchLimits.check(event: big)
        }
        let exact = TestEvents.track(index: 2, size: BatchLimits.maxEventBytes)
        try BatchLimits.check(event: exact)
        #expect(throws: BatchEventError(reason: .notAnObject)) { try BatchLimits.check(event: Array("[1]".utf8)) }

        var builder = BatchBuilder(writeKey: "k")
        #expect(throws: BatchEventError.self) { _ = try builder.append(big) }
        #expect(builder.isEmpty)

        let events = [TestEvents.track(index: 0), big, TestEvents.track(index: 2)]
        let (batches, rejected) = BatchBuilder.split(events, writeKey: "k")
        #expect(rejected.count == 1)
        #expect(rejected[0].index == 1)
        #expect(rejected[0].description.contains("event #1 rejected"))
        #expect(batches.count == 1)
        #expect(batches[0].eventCount == 2)
    }

    @Test func splitsAt2500Events() throws {
        let events = TestEvents.tracks(6_000, size: 120)
        let (batches, rejected) = BatchBuilder.split(events, writeKey: "k")
        #expect(rejected.isEmpty)
        #expect(batches.map(\.eventCount) == [2_500, 2_500, 1_000])
        var ids: [String] = []
        for batch in batches {
            #expect(batch.bodySize <= BatchLimits.maxBatchBytes)
            let json = try JSON(parsing: batch.body())
            ids += json["batch"]!.arrayValue!.map { $0["messageId"]!.stringValue! }
        }
        #expect(ids == (0..<6_000).map { "m-\($0)" })
    }

    @Test func splitsAt475000Bytes() throws {
        let events = TestEvents.tracks(2_000, size: 1_000)
        let (batches, _) = BatchBuilder.split(events, writeKey: "k")
        #expect(batches.count == 5)  // 2,000,000 bytes of events, at most ~474 per batch
        var total = 0
        for (i, batch) in batches.enumerated() {
            let body = batch.body()
            #expect(body.count == batch.bodySize)
            #expect(body.count <= 475_000)
            if i < batches.count - 1 {
                // Full: one more event would not have fitted.
                #expect(body.count + 1 + 1_000 > 475_000)
            }
            let json = try JSON(parsing: body)
            #expect(json["batch"]?.arrayValue?.count == batch.eventCount)
            total += batch.eventCount
        }
        #expect(total == 2_000)
    }
}
