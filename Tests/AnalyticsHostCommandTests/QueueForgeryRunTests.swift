import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Records forged into the upload queue after `analytics-host run` exited (under another key, and
/// a whole segment in the old, CRC-checked format) are reported by the next run — the segment,
/// the offset, "not written by this host" — and never reach the server; everything the first
/// run queued is delivered.
@Suite(.serialized) struct QueueForgeryRunTests {
    static func forged(_ id: String) -> [UInt8] {
        Array(#"{"type":"track","event":"Forged","messageId":"\#(id)","anonymousId":"a","properties":{}}"#.utf8)
    }

    @Test func forgedRecordsAreReportedAndTheRestDelivered() throws {
        let dir = makeTempDirectory("queue-forgery-run")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let failing = try LoopbackHTTPServer()
        failing.defaultResponse = .status(503, body: "down")
        let first = try RunDrainTests.run(["--drain-timeout", "1"], settings: try RunDrainTests.settings(in: dir, port: failing.port),
                                          storage: dir + "/s", stdin: RunDrainTests.lines(0..<50), in: dir)
        failing.stop()
        #expect(first.status == 4, "\(first.stdout)\n\(first.stderr)")
        #expect(first.stdout.contains("50 still queued"), "\(first.stdout)")

        // The host has exited. Forge: a record under another key at the end of its segment, and a
        // whole segment in the old format as the newest file.
        let queue = dir + "/s/queue"
        let names = try FileManager.default.contentsOfDirectory(atPath: queue).filter { $0.hasSuffix(".seg") }.sorted()
        let segment = try #require(names.last)
        let id = try #require(StorageSegmentName.parse(segment))
        var bytes = [UInt8](FileManager.default.contents(atPath: queue + "/" + segment) ?? Data())
        let offset = bytes.count
        bytes += QueueForgeryRecords.keyed(Self.forged("forged-key"), key: SipHash24(key: Array(repeating: 7, count: 16)), segment: id, offset: offset)
        _ = FileManager.default.createFile(atPath: queue + "/" + segment, contents: Data(bytes))
        let oldName = StorageSegmentName.fileName(id + 1)
        _ = FileManager.default.createFile(atPath: queue + "/" + oldName, contents: Data(
            StorageRecordFormat.segmentHeader(.checksummed) + QueueForgeryRecords.oldFormat(Self.forged("forged-old"))))

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let second = try RunDrainTests.run(["--input", "/dev/null"], settings: try RunDrainTests.settings(in: dir, port: server.port, name: "ok.json"),
                                           storage: dir + "/s", in: dir)
        let received = try server.messageIds()
        #expect(Set(received) == Set((0..<50).map { "m-\($0)" }), "the host's own events, and only those")
        #expect(!received.contains("forged-key") && !received.contains("forged-old"))
        let lines = second.stderr.split(separator: "\n").filter { $0.contains("not written by this host") }
        #expect(lines.contains { $0.contains(queue + "/" + segment) && $0.contains("at offset \(offset)") && $0.contains("MAC") },
                "names the segment and offset: \(second.stderr)")
        #expect(lines.contains { $0.contains(queue + "/" + oldName) && $0.contains("old format") }, "\(second.stderr)")
        #expect(second.stdout.contains("50 uploaded"), "\(second.stdout)")
    }
}

/// Records as something other than the host would write them into a segment.
enum QueueForgeryRecords {
    static func keyed(_ payload: [UInt8], key: SipHash24, segment: UInt64, offset: Int) -> [UInt8] {
        var record = [UInt8](repeating: 0, count: StorageRecordFormat.recordHeaderSize + payload.count)
        record.withUnsafeMutableBytes { raw in
            payload.withUnsafeBytes { p in
                (raw.baseAddress! + StorageRecordFormat.recordHeaderSize).copyMemory(from: p.baseAddress!, byteCount: p.count)
                StorageRecordFormat.writeHeader(to: raw.baseAddress!, payload: p, key: key, segment: segment, offset: offset)
            }
        }
        return record
    }

    static func oldFormat(_ payload: [UInt8]) -> [UInt8] {
        var record = StorageRecordFormat.marker
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { record += $0 }
        let crc = payload.withUnsafeBytes { StorageRecordFormat.checksum(length: UInt32(payload.count), payload: $0) }
        withUnsafeBytes(of: crc.littleEndian) { record += $0 }
        return record + payload
    }
}
