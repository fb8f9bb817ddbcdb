import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Real crashes of a real client: `segment-crash-child` streams events into its Segment.io
/// destination (uploading to a loopback server as it goes) and is SIGKILLed mid-stream and
/// mid-upload; a restart on the same storage must then upload every event the child had accepted
/// (stored on disk), with duplicates only from the batch that was in flight at a kill.
@Suite(.serialized) struct SegmentCrashTests {
    /// What one child run accepted, and the batch the server held when it died.
    struct Round {
        let first: Int
        let count: Int
        var accepted = 0
        var inFlight: Set<String> = []
        var acceptedIds: Set<String> { Set((first..<(first + accepted)).map { "c-\($0)" }) }
        func owns(_ id: String) -> Bool {
            guard id.hasPrefix("c-"), let i = Int(id.dropFirst(2)) else { return false }
            return (first..<(first + count)).contains(i)
        }
    }

    /// A client in this process on the same storage, uploading to `server`, until `ids` arrived.
    func restart(storage: String, server: LoopbackHTTPServer, expecting ids: Set<String>,
                 alsoSeen: [String] = []) throws -> (uploaded: [String], errors: [String]) {
        let errors = ErrorLog()
        var config = Configuration(writeKey: "crash-key", storageDirectory: storage)
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "crash-key"]]])
        config.settingsLocation = .defaultsOnly
        config.segment.apiHost = "\(server.baseURL)/v1"
        config.errorHandler = errors.handler
        let analytics = Analytics(configuration: config)
        defer { analytics.shutdown() }
        #expect(eventually(timeout: 60) {
            analytics.flush()
            return ids.isSubset(of: Set(((try? server.messageIds()) ?? []) + alsoSeen))
        }, "the restart uploads everything that was accepted")
        #expect(eventually { analytics.timeline.stats(forKey: "Segment.io")?.queued == 0 })
        return (try server.messageIds(), errors.messages)
    }

    @Test func sigkillMidStreamLosesNoAcceptedEvent() throws {
        let storage = makeTempDirectory("segment-crash")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        var rounds: [Round] = []
        var childErrors: [String] = []
        for number in 0..<3 {
            var round = Round(first: number * 1_000_000, count: 200_000)
            let requestsBefore = server.requestCount
            // Each run uploads under its own path, so that its requests are told apart even when
            // the server reads the last one only after the kill.
            let child = try SegmentCrashChildProcess(storage: storage, apiHost: "\(server.baseURL)/v1/run\(number)",
                                                     first: round.first, count: round.count, flushAt: 50)
            try child.readUntil { $0 == "ready" }
            let killAt = Int.random(in: 3_000...20_000)
            try child.readUntil { line in
                guard line.hasPrefix("a "), let n = Int(line.dropFirst(2)) else { return false }
                return n >= killAt && server.requestCount > requestsBefore
            }
            child.killAndReap()
            round.accepted = child.accepted
            childErrors += child.errors
            rounds.append(round)
        }
        let beforeRestart = try server.messageIds()  // more may still come in: see below
        let accepted = rounds.reduce(into: Set<String>()) { $0.formUnion($1.acceptedIds) }
        #expect(accepted.count >= 9_000)
        #expect(!beforeRestart.isEmpty, "the child uploads while it streams")

        let restartServer = try LoopbackHTTPServer()
        defer { restartServer.stop() }
        let after = try restart(storage: storage, server: restartServer, expecting: accepted, alsoSeen: beforeRestart)
        // The last request of each run may have been answered (or read) but not acknowledged on
        // disk. Looked up only now: the server may read a killed run's last request late.
        for number in rounds.indices {
            if let last = server.requests.last(where: { $0.path == "/v1/run\(number)/b" }) {
                rounds[number].inFlight = Set(try ReceivedBatch(last).messageIds)
            }
        }
        let all = try server.messageIds() + after.uploaded
        let seen = Dictionary(all.map { ($0, 1) }, uniquingKeysWith: +)
        let lost = accepted.filter { seen[$0] == nil }
        #expect(lost.count == 0, "accepted events lost: \(lost.sorted().prefix(10))")
        let foreign = seen.keys.filter { id in !rounds.contains { $0.owns(id) } }
        #expect(foreign.count == 0, "events no child sent: \(foreign.prefix(10))")
        // An event may come once more for every kill that found it in flight (a batch can be in
        // flight at several kills in a row); never otherwise.
        let badDuplicates = seen.filter { id, copies in copies > 1 + rounds.filter { $0.inFlight.contains(id) }.count }
        let badCount = badDuplicates.count
        #expect(badCount == 0, "duplicates outside a batch in flight: \(badDuplicates.keys.sorted().prefix(10))")
        if badCount > 0 {
            for (n, r) in rounds.enumerated() { print("round \(n): accepted \(r.accepted) inFlight \(r.inFlight.count)") }
            for b in try server.batches() + restartServer.batches() {
                print("batch \(b.request.path) \(b.messageIds.first ?? "-")...\(b.messageIds.last ?? "-") (\(b.messageIds.count)) retry \(b.request.header("X-Retry-Count") ?? "?") sentAt \(b.sentAt ?? "")")
            }
        }
        #expect(childErrors.isEmpty, "\(childErrors.prefix(5))")
        #expect(after.errors.isEmpty, "\(after.errors.prefix(5))")
    }

    @Test func sigkillDuringAHungUploadKeepsThatBatchForTheRestart() throws {
        let storage = makeTempDirectory("segment-crash-hung")
        let hung = try LoopbackHTTPServer()
        hung.defaultResponse = .hang
        var round = Round(first: 0, count: 200_000)
        let child = try SegmentCrashChildProcess(storage: storage, apiHost: "\(hung.baseURL)/v1",
                                                 first: round.first, count: round.count, flushAt: 100)
        try child.readUntil { $0 == "ready" }
        let killAt = Int.random(in: 3_000...15_000)
        try child.readUntil { line in
            guard line.hasPrefix("a "), let n = Int(line.dropFirst(2)) else { return false }
            return n >= killAt && hung.requestCount >= 1
        }
        child.killAndReap()
        round.accepted = child.accepted
        let inFlight = try hung.messageIds()
        hung.stop()
        #expect(hung.requestCount == 1, "one upload at a time, and it never got an answer")
        #expect(!inFlight.isEmpty && Set(inFlight).isSubset(of: Set((0..<round.count).map { "c-\($0)" })))
        #expect(child.errors.isEmpty, "\(child.errors.prefix(5))")

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let after = try restart(storage: storage, server: server, expecting: round.acceptedIds.union(inFlight))
        let seen = Dictionary(after.uploaded.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(round.acceptedIds.allSatisfy { seen[$0] == 1 }, "every accepted event exactly once")
        #expect(seen.values.allSatisfy { $0 == 1 }, "no duplicates: the hung batch was never acknowledged")
        #expect(seen.keys.allSatisfy { round.owns($0) })
        #expect(after.errors.isEmpty, "\(after.errors.prefix(5))")
    }
}
