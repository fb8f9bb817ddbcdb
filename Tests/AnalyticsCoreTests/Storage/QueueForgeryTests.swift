import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// Bytes put into a queue segment by anything but the host — a record under another key, an
/// old-format record, a record moved or copied, a whole old-format segment — are reported (the
/// segment, the offset, "not written by this host") and not delivered; every record the host
/// wrote is. Old-format queues from before the key are read once.
@Suite struct QueueForgeryTests {
    /// A keyed record as the host writes it, but under `key`.
    static func keyedRecord(_ payload: [UInt8], key: SipHash24, segment: UInt64, offset: Int) -> [UInt8] {
        var record = [UInt8](repeating: 0, count: StorageRecordFormat.recordHeaderSize + payload.count)
        record.withUnsafeMutableBytes { raw in
            payload.withUnsafeBytes { p in
                (raw.baseAddress! + StorageRecordFormat.recordHeaderSize).copyMemory(from: p.baseAddress!, byteCount: p.count)
                StorageRecordFormat.writeHeader(to: raw.baseAddress!, payload: p, key: key, segment: segment, offset: offset)
            }
        }
        return record
    }

    /// A record in the old format (marker, length, CRC-32), valid as such.
    static func oldFormatRecord(_ payload: [UInt8]) -> [UInt8] {
        var record = StorageRecordFormat.marker
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { record += $0 }
        let crc = payload.withUnsafeBytes { StorageRecordFormat.checksum(length: UInt32(payload.count), payload: $0) }
        withUnsafeBytes(of: crc.littleEndian) { record += $0 }
        return record + payload
    }

    static func otherKey() -> SipHash24 {
        var generator = SystemRandomNumberGenerator()
        return SipHash24(key: (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func forgedEvent(_ index: Int) -> [UInt8] {
        var event = queueTestEvent(index)
        event[event.count - 3] = UInt8(ascii: "F")  // same size as a real one, told apart by its text
        return event
    }

    static func notWritten(_ log: QueueErrorLog) -> [(path: String, offset: Int?, reason: String)] {
        log.all.compactMap { error in
            if case let .notWrittenByHost(path, offset, _, reason, _) = error { return (path, offset, reason) }
            return nil
        }
    }

    @Test func theKeyIsMadeOnFirstUseReadableByTheHostOnly() throws {
        let dir = QueueTestDirectory()
        let first = try StorageSecret.open(directory: dir.path)
        #expect(first.createdNow)
        var info = stat()
        #expect(stat(dir.path + "/" + StorageSecret.fileName, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
        let again = try StorageSecret.open(directory: dir.path)
        #expect(!again.createdNow)
        #expect(again.key == first.key)
        // A file that is no key is set aside, reported, and a new key made.
        _ = FileManager.default.createFile(atPath: dir.path + "/" + StorageSecret.fileName, contents: Data("hello".utf8))
        let replaced = try StorageSecret.open(directory: dir.path)
        #expect(replaced.key != first.key)
        #expect(replaced.problem.map { "\($0)" }?.contains("not a storage key") == true)
        #expect(FileManager.default.fileExists(atPath: dir.path + "/" + StorageSecret.fileName + ".corrupt"))
    }

    @Test func aRecordUnderAnotherKeyIsReportedAndEveryOtherDelivered() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<10 { try queue.append(queueTestEvent(i)) }
            try queue.close()
        }
        let segment = dir.segments()[0]
        let record = StorageRecordFormat.recordHeaderSize + 600
        let other = Self.otherKey()
        var bytes = dir.bytes(segment)
        // Record 3 replaced in place by one under another key; one more such record at the end.
        let third = 8 + 3 * record
        bytes.replaceSubrange(third..<(third + record), with: Self.keyedRecord(Self.forgedEvent(3), key: other, segment: 1, offset: third))
        let end = bytes.count
        bytes += Self.keyedRecord(Self.forgedEvent(10), key: other, segment: 1, offset: end)
        dir.write(segment, bytes)

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        let reported = Self.notWritten(log)
        #expect(reported.map(\.path) == [dir.queuePath + "/" + segment, dir.queuePath + "/" + segment], "\(log.all)")
        #expect(Set(reported.compactMap(\.offset)) == [third, end])
        #expect(reported.allSatisfy { $0.reason.contains("MAC does not verify") })
        #expect("\(log.all[0])".contains("not written by this host"))
        #expect(log.all.count == 2, "nothing else is reported (the forged tail is not a torn write): \(log.all)")
        try queue.append(queueTestEvent(11))
        #expect(try drainQueue(queue) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 11])
        #expect(log.all.count == 2, "reported once")
    }

    @Test func aRecordMovedOrCopiedDoesNotVerify() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<8 { try queue.append(queueTestEvent(i)) }
        }
        let segment = dir.segments()[0]
        let record = StorageRecordFormat.recordHeaderSize + 600
        var bytes = dir.bytes(segment)
        // The host's own record 2, copied over record 5: a replay of a real event.
        let copy = Array(bytes[(8 + 2 * record)..<(8 + 3 * record)])
        bytes.replaceSubrange((8 + 5 * record)..<(8 + 6 * record), with: copy)
        dir.write(segment, bytes)
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        #expect(Self.notWritten(log).map(\.offset) == [8 + 5 * record], "\(log.all)")
        #expect(try drainQueue(queue) == [0, 1, 2, 3, 4, 6, 7], "no second event 2")
    }

    @Test func anOldFormatRecordInAKeyedSegmentIsReported() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<4 { try queue.append(queueTestEvent(i)) }
            try queue.close()
        }
        let segment = dir.segments()[0]
        let end = dir.size(segment)
        dir.write(segment, dir.bytes(segment) + Self.oldFormatRecord(Self.forgedEvent(4)))
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        #expect(log.all.count == 1, "\(log.all)")
        let reported = Self.notWritten(log)
        #expect(reported.map(\.offset) == [end])
        #expect(reported.first?.reason.contains("old format") == true)
        #expect(try drainQueue(queue) == [0, 1, 2, 3])
    }

    /// Segment files in the old format, as the host wrote them before it had a key.
    static func writeOldFormatQueue(_ dir: QueueTestDirectory, segments: [[Int]]) throws {
        try FileManager.default.createDirectory(atPath: dir.queuePath, withIntermediateDirectories: true)
        for (n, events) in segments.enumerated() {
            let bytes = StorageRecordFormat.segmentHeader(.checksummed) + events.flatMap { oldFormatRecord(queueTestEvent($0)) }
            dir.write(StorageSegmentName.fileName(UInt64(n + 1)), bytes)
        }
        try StorageCursorFile.write(DurableQueue.Position(segment: 1, offset: 8), path: dir.queuePath + "/cursor", directory: dir.queuePath, durable: false)
    }

    @Test func anOldFormatQueueIsReadOnceTheKeyIsMadeThenOnlyAsVouched() throws {
        let dir = QueueTestDirectory()
        try Self.writeOldFormatQueue(dir, segments: [Array(0..<5), Array(5..<9)])
        do {
            let log = QueueErrorLog()
            let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
            #expect(log.all.isEmpty, "\(log.all)")
            #expect(queue.pendingEvents == 9)
            let batch = try queue.peekBatch(maxEvents: 3, maxBytes: 1 << 20)
            #expect(batch.map(queueTestIndex) == [0, 1, 2])
            try queue.acknowledge(batch)
            try queue.append(queueTestEvent(9))  // into a new, keyed segment
            try queue.close()
        }
        #expect(dir.segments() == ["00000001.seg", "00000002.seg", "00000003.seg"])
        #expect(dir.bytes("00000003.seg").prefix(8) == ArraySlice(StorageRecordFormat.segmentHeader))
        #expect(dir.files().contains(StorageLegacySegments.fileName))
        do {
            // The next run: the key exists now; the old segments are read as vouched for.
            let log = QueueErrorLog()
            let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
            #expect(log.all.isEmpty, "\(log.all)")
            #expect(try drainQueue(queue, batchSize: 2) == Array(3..<10))
        }
    }

    @Test func anOldFormatSegmentChangedOrAddedAfterTheKeyIsRefusedWhole() throws {
        let dir = QueueTestDirectory()
        try Self.writeOldFormatQueue(dir, segments: [Array(0..<5)])
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            try queue.append(queueTestEvent(5))
            try queue.close()
        }
        // After the host exited: a valid old-format record appended to the vouched segment, and a
        // whole old-format segment added as the newest.
        dir.write("00000001.seg", dir.bytes("00000001.seg") + Self.oldFormatRecord(Self.forgedEvent(100)))
        dir.write("00000003.seg", StorageRecordFormat.segmentHeader(.checksummed) + Self.oldFormatRecord(Self.forgedEvent(101)))
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        let reported = Self.notWritten(log)
        #expect(reported.map(\.path) == [dir.queuePath + "/00000001.seg", dir.queuePath + "/00000003.seg"], "\(log.all)")
        #expect(reported.allSatisfy { $0.offset == nil }, "whole files")
        #expect(reported.first?.reason.contains("changed since") == true)
        #expect(reported.last?.reason.contains("never vouched for") == true)
        #expect(dir.files().contains("00000003.seg.corrupt"))
        #expect(try drainQueue(queue) == [5], "what the host wrote after the key is delivered; the changed old segment is not")
    }

    @Test func aKeyMadeAgainDoesNotVouchForAnything() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<3 { try queue.append(queueTestEvent(i)) }
            try queue.close()
        }
        // The key deleted, an old-format segment added: not a migration (keyed segments exist).
        try FileManager.default.removeItem(atPath: dir.queuePath + "/" + StorageSecret.fileName)
        dir.write("00000002.seg", StorageRecordFormat.segmentHeader(.checksummed) + Self.oldFormatRecord(Self.forgedEvent(7)))
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        let reported = Self.notWritten(log)
        #expect(reported.contains { $0.path.hasSuffix("00000002.seg") && $0.offset == nil }, "\(log.all)")
        #expect(reported.contains { $0.path.hasSuffix("00000001.seg") }, "records under the lost key do not verify: \(log.all)")
        #expect(try drainQueue(queue).isEmpty)
    }

    @Test func theSentBackJournalSkipsAForgedEntry() throws {
        let storage = makeTempDirectory("sent-back-forgery")
        defer { try? FileManager.default.removeItem(atPath: storage) }
        let secret = Result<StorageSecret, QueueError>.success(try StorageSecret.open(directory: storage))
        let errors = ErrorLog()
        func event(_ id: String) -> [UInt8] { Array(#"{"type":"track","event":"E","messageId":"\#(id)"}"#.utf8) }
        do {
            let journal = SentBackJournal(storageDirectory: storage, secret: secret, report: errors.handler)
            for i in 0..<4 { #expect(journal.append(event("sb-\(i)")) == nil) }
            journal.close()  // nothing ran: the entries stay for the next run
        }
        let segmentPath = try #require(try FileManager.default.contentsOfDirectory(atPath: storage + "/sent-back").first { $0.hasSuffix(".seg") })
        let file = storage + "/sent-back/" + segmentPath
        var bytes = [UInt8](FileManager.default.contents(atPath: file) ?? Data())
        bytes += Self.keyedRecord(event("sb-forged"), key: Self.otherKey(), segment: StorageSegmentName.parse(segmentPath)!, offset: bytes.count)
        _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))

        let journal = SentBackJournal(storageDirectory: storage, secret: .success(try StorageSecret.open(directory: storage)), report: errors.handler)
        let left = journal.leftOver()
        #expect(left.map(\.messageId) == ["sb-0", "sb-1", "sb-2", "sb-3"])
        #expect(errors.messages.contains { $0.contains(segmentPath) && $0.contains("not written by this host") }, "\(errors.messages)")
        journal.close()
    }
}

@Suite struct SipHashTests {
    /// The specification's vectors: key 00 01 … 0f, message 00 01 … n-1 (the 64-bit result as
    /// its eight little-endian bytes).
    @Test(arguments: [
        (0, "310e0edd47db6f72"), (1, "fd67dc93c539f874"), (7, "37d1018bf50002ab"), (8, "6224939a79f5f593"),
        (15, "e545be4961ca29a1"), (16, "db9bc2577fcc2a3f"), (63, "724506eb4c328a95"),
    ])
    func specificationVectors(length: Int, expected: String) {
        let key = SipHash24(key: Array(0..<16))
        let mac = key.mac(Array(0..<UInt8(length)))
        let hex = withUnsafeBytes(of: mac.littleEndian) { $0.map { String(format: "%02x", $0) }.joined() }
        #expect(hex == expected)
    }

    @Test func piecesGiveTheSameMacAsTheWhole() {
        let key = SipHash24(key: Array(100..<116))
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let whole = key.mac(message)
        for cut in [0, 1, 3, 7, 8, 9, 500, 999, 1000] {
            var stream = SipHash24.Stream(key)
            message[..<cut].withUnsafeBytes { stream.update($0) }
            for b in message[cut...] { [b].withUnsafeBytes { stream.update($0) } }
            #expect(stream.finish() == whole, "cut at \(cut)")
        }
        // Three words before the payload are the same as hashing them in front of it.
        let words: [UInt64] = [7, 1234, 600]
        let joined = words.withUnsafeBytes { Array($0) } + message
        #expect(message.withUnsafeBytes { key.mac(7, 1234, 600, $0) } == key.mac(joined))
    }
}
