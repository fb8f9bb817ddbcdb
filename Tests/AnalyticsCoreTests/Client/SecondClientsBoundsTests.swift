import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// What second clients (`AH_EXT_CLIENTS`) may hold on disk: each queue its share of a total, no
/// new client while the queues on disk (earlier runs' included) leave no room, and a queue left
/// empty removed when the host stops, so a library opening new write keys run after run does not
/// grow the disk.
@Suite struct SecondClientsBoundsTests {
    func host(_ storage: String) throws -> Analytics {
        var config = Configuration(writeKey: "host-key", storageDirectory: storage)
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.segment.apiHost = "http://127.0.0.1:\(try refusedPort())/v1"
        config.flushInterval = 3600
        config.flushTimeout = 1
        return Analytics(configuration: config)
    }

    @Test func anEmptyQueueIsRemovedAtTheEndAndOneWithEventsIsKept() throws {
        let storage = makeTempDirectory("second-clients")
        defer { FixtureBuilder.remove(storage) }
        let analytics = try host(storage)
        let empty = try analytics.openSecondClient(writeKey: "empty-key")
        let busy = try analytics.openSecondClient(writeKey: "busy-key")
        #expect(empty != busy)
        analytics.secondClients.client(busy)?.track("Kept")
        analytics.shutdown()
        let root = storage + "/clients/"
        #expect(!FileManager.default.fileExists(atPath: root + SecondClients.directoryName(for: "empty-key") + "/queue"), "reclaimed")
        #expect(FileManager.default.fileExists(atPath: root + SecondClients.directoryName(for: "busy-key") + "/queue"), "its event waits for the next run")
        #expect(SecondClientQueues.onDisk(in: storage).map(\.directory) == [root + SecondClients.directoryName(for: "busy-key")])
    }

    @Test func queuesOnDiskFromEarlierRunsLeaveNoRoomForAnotherClient() throws {
        let storage = makeTempDirectory("second-clients")
        defer { FixtureBuilder.remove(storage) }
        // An earlier run's queues, for keys nobody opens again, almost at the total.
        let left = storage + "/clients/earlier-0/queue"
        try FileManager.default.createDirectory(atPath: left, withIntermediateDirectories: true)
        let fd = open(left + "/segment-0", O_CREAT | O_WRONLY, 0o600)
        #expect(posix_fallocate(fd, 0, off_t(SecondClients.totalQueueBytes - SecondClients.queueBytes / 2)) == 0)
        close(fd)
        let analytics = try host(storage)
        defer { analytics.shutdown() }
        let error = #expect(throws: SecondClients.OpenError.self) { _ = try analytics.openSecondClient(writeKey: "new-key") }
        guard case .unavailable(let why)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(why.contains("second clients' queues hold") && why.contains("no room for another's \(SecondClients.queueBytes)"), "\(why)")
    }

    @Test func eachClientsQueueIsItsShare() {
        var host = Configuration(writeKey: "host-key", storageDirectory: "/tmp/x")
        host.maxQueueBytes = 1 << 30
        let c = SecondClients.configuration(writeKey: "k", host: host, segmentSettings: [:])
        #expect(c.maxQueueBytes == SecondClients.queueBytes)
        #expect(SecondClients.queueBytes * SecondClients.limit == SecondClients.totalQueueBytes)
    }
}
