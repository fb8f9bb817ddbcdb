import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// Storage damaged or unusable (issue "Correct at the edges" §2): each fault is found when the
/// queue opens and reported with what it costs — events and bytes lost or sent again — the damaged
/// file is kept aside, and the rest is delivered. An app gets a thrown error from `Analytics.start`.
@Suite struct StorageFaultTests {
    static let config = DurableQueue.Configuration(segmentBytes: 8192)  // 13 records of 616 bytes per segment
    static let record = StorageRecordFormat.recordHeaderSize + 600

    /// 60 events in segments 1…5 (13, 13, 13, 13, 8).
    func filledQueue(acknowledging: Int = 0) throws -> QueueTestDirectory {
        let dir = QueueTestDirectory()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: Self.config)
        for i in 0..<60 { try queue.append(queueTestEvent(i)) }
        if acknowledging > 0 { try queue.acknowledge(try queue.peekBatch(maxEvents: acknowledging, maxBytes: 1 << 20)) }
        try queue.close()
        #expect(dir.segments() == (acknowledging >= 13 ? 2...5 : 1...5).map { StorageSegmentName.fileName(UInt64($0)) })
        return dir
    }

    @Test func aMissingOldestSegmentIsReportedWithWhatItHeld() throws {
        let dir = try filledQueue()
        unlink(dir.queuePath + "/00000001.seg")
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: Self.config, onError: log.handler)
        #expect(log.all == [.segmentsLost(paths: [dir.queuePath + "/00000001.seg"], reason: "is missing",
                                          events: 13, bytes: 13 * Self.record, setAsideAs: [])])
        #expect("\(log.all[0])".contains("13 events (\(13 * Self.record) bytes) in it are lost"))
        #expect(queue.pendingEvents == 47)
        #expect(try drainQueue(queue) == Array(13..<60), "the rest is delivered")
    }

    @Test func aMissingMiddleSegmentIsReportedWithWhatItHeld() throws {
        let dir = try filledQueue()
        unlink(dir.queuePath + "/00000003.seg")
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: Self.config, onError: log.handler)
        #expect(log.all == [.segmentsLost(paths: [dir.queuePath + "/00000003.seg"], reason: "is missing",
                                          events: 13, bytes: 13 * Self.record, setAsideAs: [])])
        #expect(try drainQueue(queue) == Array(0..<26) + Array(39..<60))
    }

    @Test func aSegmentTruncatedToZeroIsKeptAsideAndReported() throws {
        let dir = try filledQueue()
        dir.write("00000002.seg", [])
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: Self.config, onError: log.handler)
        let aside = dir.queuePath + "/00000002.seg.corrupt"
        #expect(log.all == [.segmentsLost(paths: [dir.queuePath + "/00000002.seg"], reason: "was truncated to 0 bytes",
                                          events: 13, bytes: 13 * Self.record, setAsideAs: [aside])])
        #expect(dir.files().contains("00000002.seg.corrupt"))
        #expect(try drainQueue(queue) == Array(0..<13) + Array(26..<60))
    }

    @Test func aDeletedCursorIsReportedWithWhatWillBeSentAgain() throws {
        let dir = try filledQueue(acknowledging: 20)  // segment 1 gone, 7 of segment 2 acknowledged
        unlink(dir.queuePath + "/cursor")
        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, configuration: Self.config, onError: log.handler)
        #expect(log.all == [.cursorLost(path: dir.queuePath + "/cursor", reason: "file is missing", resend: 47,
                                        bytes: 47 * Self.record, setAsideAs: nil)])
        #expect("\(log.all[0])".contains("47 events (\(47 * Self.record) bytes) will be sent"))
        #expect(try drainQueue(queue) == Array(13..<60), "duplicates (13…19), never loss")
        try queue.close()
        let reopened = try DurableQueue(directory: dir.queuePath + "", configuration: Self.config, onError: log.handler)
        #expect(log.all.count == 1, "reported once: the cursor is written again")
        try reopened.close()
    }

    /// An app at the disk cap with the server unreachable: every event is either still queued or
    /// counted as failed and reported — exactly, including those of a batch that was out for upload.
    @Test func failedIsExactAtTheCapAndMessagesSayItOnce() throws {
        let dir = makeTempDirectory("fault-cap")
        let port = try refusedPort()
        let errors = ErrorLog()
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.trackApplicationLifecycleEvents = false
        config.settingsLocation = .defaultsOnly
        config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "k"]]])
        config.segment.apiHost = "http://127.0.0.1:\(port)/v1"
        config.maxQueueBytes = 64 << 10
        config.flushAt = 5
        config.errorHandler = errors.handler
        let analytics = try Analytics.start(configuration: config)
        let total = 1_000
        for i in 0..<total { analytics.track("Capped", properties: ["i": .number(Double(i)), "pad": .string(String(repeating: "x", count: 300))]) }
        let stats = try #require(analytics.timeline.stats(forKey: "Segment.io"))
        analytics.shutdown()
        let reported = errors.all.reduce(0) { sum, error in
            guard case .storage(let text) = error, let range = text.range(of: "dropped the ") else { return sum }
            return sum + (Int(text[range.upperBound...].prefix { $0.isNumber }) ?? 0)
        }
        #expect(stats.failed > 0)
        #expect(stats.failed + stats.queued == total, "failed \(stats.failed) + queued \(stats.queued)")
        #expect(reported == stats.failed, "every failed event was reported, once")
        let reopened = try DurableQueue(directory: dir + "/queue", configuration: .init(secret: StorageSecret.open(directory: dir)))
        #expect(reopened.pendingEvents == stats.queued, "queued is what is on disk")
        try reopened.close()
        for message in errors.messages {
            let words = message.split(separator: " ")
            let doubled = zip(words, words.dropFirst()).first { $0 == $1 && $0.allSatisfy(\.isLetter) }
            #expect(doubled == nil, "doubled word in: \(message)")
        }
    }

    /// A library app learns at start-up that another process holds the storage.
    @Test func startThrowsWhenTheStorageIsHeldOrCannotBeCreated() throws {
        let dir = makeTempDirectory("fault-start")
        let holder = try DurableQueue(directory: dir + "/queue")
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.trackApplicationLifecycleEvents = false
        config.settingsLocation = .defaultsOnly
        config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "k"]]])
        config.errorHandler = { _ in }
        #expect(throws: AnalyticsError.self) { try Analytics.start(configuration: config) }
        do {
            _ = try Analytics.start(configuration: config)
        } catch {
            #expect("\(error)".contains("is in use"), "\(error)")
        }
        try holder.close()
        let analytics = try Analytics.start(configuration: config)
        #expect(analytics.storageError == nil)
        analytics.shutdown()

        try "x".write(toFile: dir + "/file", atomically: true, encoding: .utf8)
        config.storageDirectory = dir + "/file/below"
        #expect(throws: AnalyticsError.self) { try Analytics.start(configuration: config) }
    }
}
