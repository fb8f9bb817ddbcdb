import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

@Suite struct DurableQueueTests {
    @Test func appendPeekAcknowledgeKeepsOrder() throws {
        let dir = QueueTestDirectory()
        let queue = try DurableQueue(directory: dir.queuePath)
        #expect(!queue.hasPendingEvents)
        #expect(try queue.peekBatch(maxEvents: 10, maxBytes: 10_000).isEmpty)
        for i in 0..<100 { try queue.append(queueTestEvent(i)) }
        #expect(queue.hasPendingEvents)

        let first = try queue.peekBatch(maxEvents: 30, maxBytes: 1_000_000)
        #expect(first.map(queueTestIndex) == Array(0..<30))
        // Peeking again without acknowledging hands out the same events.
        #expect(try queue.peekBatch(maxEvents: 30, maxBytes: 1_000_000).map(queueTestIndex) == Array(0..<30))
        try queue.acknowledge(first)
        try queue.acknowledge(first)  // a repeated acknowledgement changes nothing

        // The byte limit cuts the batch: ten 600-byte events fit in 6,000 bytes, eleven do not.
        let limited = try queue.peekBatch(maxEvents: 100, maxBytes: 6_000)
        #expect(limited.map(queueTestIndex) == Array(30..<40))
        #expect(limited.byteCount == 6_000)
        // A single event larger than maxBytes still comes out, so it cannot block the queue.
        #expect(try queue.peekBatch(maxEvents: 100, maxBytes: 10).map(queueTestIndex) == [30])

        let body = try JSON(parsing: limited.jsonArrayBytes())
        #expect(body.arrayValue?.count == 10)
        #expect(body[path: "3.i"] == 33)

        #expect(try drainQueue(queue) == Array(30..<100))
        #expect(!queue.hasPendingEvents)
        #expect(try queue.peekBatch(maxEvents: 10, maxBytes: 10_000).isEmpty)
    }

    @Test func restartReopensAndContinuesAcrossSegments() throws {
        let dir = QueueTestDirectory()
        let config = DurableQueue.Configuration(segmentBytes: 4096)
        do {
            let queue = try DurableQueue(directory: dir.queuePath, configuration: config)
            for i in 0..<50 { try queue.append(queueTestEvent(i)) }
            try queue.acknowledge(try queue.peekBatch(maxEvents: 20, maxBytes: 1_000_000))
            try queue.close()
            #expect(throws: QueueError.closed(path: dir.queuePath)) { try queue.append(queueTestEvent(0)) }
        }
        // 4 KiB segments hold six 616-byte records: the three fully acknowledged ones are gone.
        #expect(dir.segments().count == 6)
        #expect(dir.segments().first == "00000004.seg")
        do {
            // Not closed: the instance is simply dropped, as in a crash of a thread-less process.
            let queue = try DurableQueue(directory: dir.queuePath, configuration: config)
            #expect(try queue.peekBatch(maxEvents: 5, maxBytes: 1_000_000).map(queueTestIndex) == Array(20..<25))
            for i in 50..<60 { try queue.append(queueTestEvent(i)) }
        }
        let queue = try DurableQueue(directory: dir.queuePath, configuration: config)
        #expect(try drainQueue(queue, batchSize: 7) == Array(20..<60))
        #expect(dir.segments().count == 1)
        try queue.close()
        let reopened = try DurableQueue(directory: dir.queuePath, configuration: config)
        #expect(!reopened.hasPendingEvents)
    }

    @Test func capDropsOldestEventsAndReportsTheCount() throws {
        let dir = QueueTestDirectory()
        let log = QueueErrorLog()
        let cap = 64 << 10
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(maxDiskBytes: cap, maxRecordBytes: 32_000), onError: log.handler)
        try queue.acknowledge(try queue.peekBatch(maxEvents: 1, maxBytes: 1))  // empty batch: harmless
        for i in 0..<1_000 {
            try queue.append(queueTestEvent(i))
            #expect(queue.diskBytes <= cap)
        }
        let onDisk = dir.segments().reduce(0) { $0 + dir.size($1) }
        #expect(onDisk == queue.diskBytes)
        #expect(onDisk <= cap)

        let left = try drainQueue(queue)
        #expect(!left.isEmpty)
        #expect(left == Array((1_000 - left.count)..<1_000))  // the newest events, in order
        #expect(log.droppedEvents == 1_000 - left.count)       // every dropped event was reported
        #expect(log.all.allSatisfy { if case .droppedOverCap(_, _, capBytes: cap) = $0 { true } else { false } })
        #expect(log.all.first.map { "\($0)" }?.contains("dropped the") == true)
    }

    @Test func capCountsOnlyUnacknowledgedEventsAsDropped() throws {
        let dir = QueueTestDirectory()
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(maxDiskBytes: 64 << 10, maxRecordBytes: 32_000), onError: log.handler)
        for i in 0..<20 { try queue.append(queueTestEvent(i)) }
        try queue.acknowledge(try queue.peekBatch(maxEvents: 20, maxBytes: 1_000_000))
        for i in 20..<300 { try queue.append(queueTestEvent(i)) }
        let left = try drainQueue(queue)
        #expect(left.last == 299)
        #expect(log.droppedEvents == 280 - left.count)
    }

    @Test func tornTailIsCutOffAndEveryCompleteEventKept() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<5 { try queue.append(queueTestEvent(i)) }
        }
        let segment = dir.segments()[0]
        let intact = dir.size(segment)
        // A crash mid-write: the start of a sixth record (header and 50 of its 600 payload bytes).
        var record: [UInt8] = []
        let payload = queueTestEvent(5)
        record += [0xF7, 0x51, 0x52, 0x1A]
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { record += $0 }
        record += [0, 0, 0, 0] + payload.prefix(50)
        dir.write(segment, dir.bytes(segment) + record)

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        let aside = dir.queuePath + "/" + segment + ".at-\(intact).corrupt"
        #expect(log.all == [.tornTailRepaired(path: dir.queuePath + "/" + segment, bytesRemoved: record.count, setAsideAs: aside)])
        #expect(dir.bytes(segment + ".at-\(intact).corrupt") == record, "the torn bytes are kept for inspection")
        // Cut off: the file ends there, or (the open queue maps its active segment) zeros follow.
        let after = dir.bytes(segment).dropFirst(intact)
        #expect(after.allSatisfy { $0 == 0 }, "the torn bytes are gone from the segment")
        try queue.append(queueTestEvent(6))
        #expect(try drainQueue(queue) == [0, 1, 2, 3, 4, 6])
    }

    @Test func reservedSpaceAndAnUnfinishedMappedAppendAreCutOffSilently() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<5 { try queue.append(queueTestEvent(i)) }
            try queue.close()
        }
        let segment = dir.segments()[0]
        let intact = dir.size(segment)
        // As a SIGKILL leaves a mapped segment: an append's payload copied, its header (marker
        // written last) not yet, then the zeros of the reserved space.
        let unfinished = [UInt8](repeating: 0, count: 12) + queueTestEvent(5).prefix(80)
        dir.write(segment, dir.bytes(segment) + unfinished + [UInt8](repeating: 0, count: 64 << 10))
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        #expect(log.all.isEmpty, "that append never returned: nothing accepted is lost, nothing to report")
        try queue.append(queueTestEvent(6))
        #expect(try drainQueue(queue) == [0, 1, 2, 3, 4, 6])
        try queue.close()
        #expect(dir.size(segment) == intact + StorageRecordFormat.recordHeaderSize + queueTestEvent(6).count, "closed: the file has its exact size")
    }

    @Test func appendsIntoTheMappedSegmentSurviveWithoutClose() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<50 { try queue.append(queueTestEvent(i)) }
            // Dropped without close: what SIGKILL leaves is tested with a real kill in
            // DurableQueueCrashTests; here the page cache is read back by a new opener.
        }
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        #expect(log.all.isEmpty)
        #expect(try drainQueue(queue) == Array(0..<50))
    }

    @Test func interruptedSegmentCreationIsRepairedSilently() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(segmentBytes: 4096))
            for i in 0..<6 { try queue.append(queueTestEvent(i)) }
        }
        dir.write("00000002.seg", [0x41, 0x48, 0x51])  // crash after writing 3 bytes of a new header
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(segmentBytes: 4096), onError: log.handler)
        #expect(log.all.isEmpty)
        try queue.append(queueTestEvent(6))
        #expect(try drainQueue(queue) == Array(0..<7))
    }

    @Test func corruptMiddleIsSetAsideAndTheRestDelivered() throws {
        let dir = QueueTestDirectory()
        let config = DurableQueue.Configuration(segmentBytes: 8192)  // 13 records of 616 bytes per segment
        do {
            let queue = try DurableQueue(directory: dir.queuePath, configuration: config)
            for i in 0..<60 { try queue.append(queueTestEvent(i)) }
        }
        #expect(dir.segments().count == 5)
        let record = StorageRecordFormat.recordHeaderSize + 600
        // Segment 2 holds events 13...25. Flip a payload byte of event 15 (its MAC fails) and
        // smash the length field of event 20 (framing lost: the reader must find event 21 again).
        var bytes = dir.bytes("00000002.seg")
        bytes[8 + 2 * record + 100] ^= 0x20
        bytes[8 + 7 * record + 5] = 0xFF
        dir.write("00000002.seg", bytes)

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: config, onError: log.handler)
        #expect(log.all.count == 2, "every segment is checked when the queue opens")
        let delivered = try drainQueue(queue, batchSize: 10)
        #expect(log.all.count == 2, "reported once, not again when read")
        #expect(delivered == Array(0..<60).filter { $0 != 15 && $0 != 20 })

        let regions = log.all.compactMap { error -> (Int, Int, String)? in
            if case let .corruptRegion(path, offset, length, _, aside) = error, path.hasSuffix("00000002.seg") { return (offset, length, aside) }
            if case let .notWrittenByHost(path, offset?, length, _, aside) = error, path.hasSuffix("00000002.seg") { return (offset, length, aside) }
            return nil
        }
        #expect(regions.map(\.0) == [8 + 2 * record, 8 + 7 * record])
        #expect(regions.map(\.1) == [record, record])
        for (offset, length, aside) in regions {
            let saved = [UInt8](FileManager.default.contents(atPath: aside) ?? Data())
            #expect(saved == Array(bytes[offset..<(offset + length)]))
        }
        // A record whose MAC fails cannot be told from a forged one: reported as not written by this host.
        #expect("\(log.all[0])".contains("not written by this host"))
        #expect("\(log.all[1])".contains("corrupt bytes"), "a smashed length is damage, not a record")
    }

    @Test func garbageSegmentFilesAreSetAside() throws {
        let dir = QueueTestDirectory()
        let config = DurableQueue.Configuration(segmentBytes: 8192)
        do {
            let queue = try DurableQueue(directory: dir.queuePath, configuration: config)
            for i in 0..<38 { try queue.append(queueTestEvent(i)) }  // segments 1, 2, 3 (13 + 13 + 12)
        }
        var generator = SystemRandomNumberGenerator()
        dir.write("00000002.seg", (0..<5000).map { _ in UInt8.random(in: 0...255, using: &generator) })
        dir.write("00000009.seg", Array("this is not a queue segment".utf8))  // garbage as the newest file
        dir.write("notes.txt", Array("ignored".utf8))

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: config, onError: log.handler)
        // Both found at open: the garbage newest file and the garbage middle one.
        #expect(log.all == [.corruptFile(path: dir.queuePath + "/00000009.seg", reason: "no segment header and no intact record",
                                         setAsideAs: dir.queuePath + "/00000009.seg.corrupt"),
                            .corruptFile(path: dir.queuePath + "/00000002.seg", reason: "no segment header and no intact record",
                                         setAsideAs: dir.queuePath + "/00000002.seg.corrupt")])
        try queue.append(queueTestEvent(38))
        #expect(dir.segments().last == "00000003.seg")  // appending continues in the last good segment
        #expect(try drainQueue(queue) == Array(0..<13) + Array(26..<39))
        #expect(log.all.count == 2)
        #expect(log.all.last == .corruptFile(path: dir.queuePath + "/00000002.seg", reason: "no segment header and no intact record",
                                             setAsideAs: dir.queuePath + "/00000002.seg.corrupt"))
        #expect(dir.files().contains("00000002.seg.corrupt"))
        #expect(dir.files().contains("notes.txt"))
    }

    @Test func damagedCursorRedeliversInsteadOfLosing() throws {
        let dir = QueueTestDirectory()
        do {
            let queue = try DurableQueue(directory: dir.queuePath)
            for i in 0..<10 { try queue.append(queueTestEvent(i)) }
            try queue.acknowledge(try queue.peekBatch(maxEvents: 4, maxBytes: 1_000_000))
        }
        var cursor = dir.bytes("cursor")
        #expect(cursor.count == 28)
        cursor[17] ^= 1
        dir.write("cursor", cursor)
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        #expect(log.all == [.cursorLost(path: dir.queuePath + "/cursor", reason: "is unreadable (checksum mismatch)", resend: 10,
                                        bytes: (0..<10).map { queueTestEvent($0).count + StorageRecordFormat.recordHeaderSize }.reduce(0, +),
                                        setAsideAs: dir.queuePath + "/cursor.corrupt")])
        #expect(dir.files().contains("cursor.corrupt"), "the damaged cursor is kept")
        #expect(try drainQueue(queue) == Array(0..<10))
    }

    @Test func secondOpenerGetsTheLockError() throws {
        let dir = QueueTestDirectory()
        let first = try DurableQueue(directory: dir.queuePath)
        try first.append(queueTestEvent(1))
        #expect(throws: QueueError.locked(path: dir.queuePath + "/LOCK", holderPID: getpid())) {
            try DurableQueue(directory: dir.queuePath)
        }
        #expect(try first.peekBatch(maxEvents: 5, maxBytes: 100_000).map(queueTestIndex) == [1])
        try first.close()
        let second = try DurableQueue(directory: dir.queuePath)
        #expect(try drainQueue(second) == [1])
    }

    @Test func oversizedEventIsRefusedAndNothingWritten() throws {
        let dir = QueueTestDirectory()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(maxRecordBytes: 32_000))
        #expect(throws: QueueError.recordTooLarge(bytes: 32_001, limit: 32_000)) {
            try queue.append([UInt8](repeating: 0x20, count: 32_001))
        }
        try queue.append([UInt8](repeating: 0x20, count: 32_000))
        try queue.append("")
        let batch = try queue.peekBatch(maxEvents: 10, maxBytes: 1)
        #expect(batch.map(\.count) == [32_000])
        try queue.acknowledge(batch)
        #expect(try queue.peekBatch(maxEvents: 10, maxBytes: 100).map(\.count) == [0])
    }

    @Test func invalidConfigurationIsAClearError() {
        #expect(throws: QueueError.self) {
            try DurableQueue(directory: "/tmp/never-created", configuration: .init(maxDiskBytes: 1000))
        }
        #expect(throws: QueueError.self) {
            try DurableQueue(directory: "/proc/forbidden-queue")
        }
    }

    @Test func concurrentAppendersKeepEachThreadsOrder() throws {
        let dir = QueueTestDirectory()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(segmentBytes: 64 << 10))
        let threads = 4
        let perThread = 5_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for n in 0..<perThread { try? queue.append(queueTestEvent(thread * 1_000_000 + n, size: 200)) }
        }
        let all = try drainQueue(queue, batchSize: 500)
        #expect(all.count == threads * perThread)
        for thread in 0..<threads {
            #expect(all.filter { $0 / 1_000_000 == thread } == (0..<perThread).map { thread * 1_000_000 + $0 })
        }
    }

    @Test func fsyncPoliciesStillDeliver() throws {
        let dir = QueueTestDirectory()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: .init(fsync: .every(appends: 3)))
        for i in 0..<10 { try queue.append(queueTestEvent(i)) }
        try queue.flush()
        #expect(try drainQueue(queue) == Array(0..<10))
        try queue.close()
    }
}
