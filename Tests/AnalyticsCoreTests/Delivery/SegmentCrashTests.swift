import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Real crashes of a real client: `segment-crash-child` calls `track()` in a loop and reports on a
/// pipe how many calls returned; it is SIGKILLed 20 times at random moments — right at start-up,
/// mid-stream while uploading, and while an upload hangs — on the same storage. A restart must then
/// upload every event whose call had returned, with duplicates only from a batch that was in
/// flight at a kill.
@Suite(.serialized) struct SegmentCrashTests {
    struct Round {
        let number: Int
        let first: Int
        let hung: Bool
        var accepted = 0
        /// Indices of the last batch the normal server received from this round (maybe unacknowledged).
        var inFlight: Set<Int> = []
        var acceptedIndices: Range<Int> { first..<(first + accepted) }
    }

    static let kills = 20
    static let perRound = 1_000_000

    @Test func twentyKillsAtRandomMomentsLoseNoAcceptedEvent() throws {
        let storage = makeTempDirectory("segment-crash")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let hung = try LoopbackHTTPServer()
        hung.defaultResponse = .hang
        defer { hung.stop() }

        var rounds: [Round] = []
        var childErrors: [String] = []
        for number in 0..<Self.kills {
            // Every fourth round uploads to a server that never answers: the kill finds a hung upload.
            var round = Round(number: number, first: number * Self.perRound, hung: number % 4 == 3)
            let target = round.hung ? hung : server
            let requestsBefore = target.requestCount
            let child = try SegmentCrashChildProcess(storage: storage, apiHost: "\(target.baseURL)/v1/run\(number)",
                                                     first: round.first, count: Self.perRound, flushAt: Int.random(in: 10...300))
            // Moment of the kill: 0 = at once (while the queue opens and recovers), else after that
            // many calls returned (and, for a hung round, once its upload is hanging).
            let killAt = number % 5 == 0 ? 0 : Int.random(in: 1...1_500)
            if killAt > 0 {
                try child.readUntil { line in
                    guard line.hasPrefix("a "), let n = Int(line.dropFirst(2)) else { return false }
                    return n >= killAt && (!round.hung || target.requestCount > requestsBefore)
                }
            }
            child.killAndReap()
            round.accepted = child.accepted
            childErrors += child.errors
            rounds.append(round)
        }
        let accepted = rounds.reduce(into: Set<Int>()) { $0.formUnion($1.acceptedIndices) }
        #expect(accepted.count >= 1_000, "the children got that far: \(rounds.map(\.accepted))")
        #expect(hung.requestCount >= 1, "some kills found an upload hanging")

        // The restart: a client in this process on the same storage, uploading to a third server.
        let restartServer = try LoopbackHTTPServer()
        defer { restartServer.stop() }
        let (analytics, errors) = try SegmentHarness.restarted(storage: storage, uploadingTo: restartServer)
        let segment = try #require(analytics.find(key: "Segment.io") as? SegmentDestination)
        // A bound, not a wait: drain returns as soon as the queue is empty (generous for a loaded CI).
        let drainStart = monotonicSeconds()
        let drained = segment.drain(timeout: 240)
        #expect(drained, "the restart uploads the whole backlog: \(segment.pendingEvents) left after \(monotonicSeconds() - drainStart) s, \(segment.uploadedEvents) uploaded")
        #expect(analytics.timeline.stats(forKey: "Segment.io")?.queued == 0)
        analytics.shutdown()

        // Looked up only now: the server may read a killed run's last request late.
        for index in rounds.indices where !rounds[index].hung {
            if let last = server.requests.last(where: { $0.path == "/v1/run\(index)/b" }) {
                rounds[index].inFlight = Set(try ReceivedBatch(last).crashIndices)
            }
        }
        let received = try server.batches().flatMap(\.crashIndices) + restartServer.batches().flatMap(\.crashIndices)
        let seen = Dictionary(received.map { ($0, 1) }, uniquingKeysWith: +)
        let lost = accepted.filter { seen[$0] == nil }
        #expect(lost.isEmpty, "\(lost.count) accepted events lost, e.g. \(lost.sorted().prefix(10))")
        let foreign = seen.keys.filter { i in !rounds.contains { (($0.first)..<($0.first + Self.perRound)).contains(i) } }
        #expect(foreign.isEmpty, "events no child sent: \(foreign.prefix(10))")
        // An event may come once more for every kill that found it in flight, never otherwise.
        let badDuplicates = seen.filter { index, copies in copies > 1 + rounds.filter { $0.inFlight.contains(index) }.count }
        #expect(badDuplicates.isEmpty, "duplicates outside a batch in flight: \(badDuplicates.keys.sorted().prefix(10))")
        #expect(childErrors.isEmpty, "\(childErrors.prefix(5))")
        #expect(errors.messages.allSatisfy { !$0.contains("lost") && !$0.contains("dropped") }, "\(errors.messages.prefix(5))")
    }
}
