import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// Real crashes: a child process appends (and sometimes consumes) events and is SIGKILLed at
/// random moments, several times over the same directory. Afterwards every event it reported as
/// accepted must have been delivered (handed to the child's consumer in a batch, or read by the
/// final drain) exactly once — except events of a batch that was in flight (handed out, its
/// acknowledgement not confirmed) at a kill, which may come a second time.
@Suite struct DurableQueueCrashTests {
    struct Round {
        let base: Int
        var accepted: [Int] = []
        var received: [Int] = []
        var inFlight: [Int] = []
        var errors: [String] = []
    }

    @Test func sigkillAtRandomMomentsLosesNothingAndDuplicatesOnlyTheBatchInFlight() throws {
        let dir = QueueTestDirectory()
        var generator = SystemRandomNumberGenerator()
        var rounds: [Round] = []
        for number in 0..<12 {
            var round = Round(base: number * 1_000_000)
            let segmentBytes = [4096, 16_384, 4 << 20][number % 3]
            let ackEvery = number % 4 == 0 ? 0 : [3, 7, 20][number % 3]
            // Some kills land while the child is still opening (recovering) the queue.
            let killAfter = number % 5 == 2 ? 0 : Int.random(in: 20...2_500, using: &generator)
            let child = try QueueChildProcess(arguments: [
                "run", dir.queuePath, String(round.base), String(segmentBytes), String(ackEvery),
                String(UInt64.random(in: 1...UInt64.max, using: &generator)),
            ])
            var peeked: [Int]? = nil
            func take(_ line: String) {
                if line.hasPrefix("a "), let index = Int(line.dropFirst(2)) {
                    round.accepted.append(index)
                } else if line.hasPrefix("p ") {
                    peeked = line.dropFirst(2).split(separator: ",").compactMap { Int($0) }
                    round.received += peeked ?? []
                } else if line == "d" {
                    peeked = nil
                } else if line.hasPrefix("e ") {
                    round.errors.append(String(line.dropFirst(2)))
                }
            }
            while round.accepted.count < killAfter, let line = try child.readLine() { take(line) }
            child.killAndReap()
            for line in try child.remainingLines() { take(line) }
            round.inFlight = peeked ?? []
            rounds.append(round)
        }

        let log = QueueErrorLog()
        let queue = try DurableQueue(directory: dir.queuePath, onError: log.handler)
        let drained = try drainQueue(queue, batchSize: 500)

        let accepted = Set(rounds.flatMap(\.accepted))
        let inFlight = Set(rounds.flatMap(\.inFlight))
        // The one event per round whose append may have completed just before the kill, unannounced.
        let unannounced = Set(rounds.map { ($0.accepted.last ?? $0.base - 1) + 1 })
        var seen: [Int: Int] = [:]
        for index in rounds.flatMap(\.received) + drained { seen[index, default: 0] += 1 }

        #expect(accepted.count > 2_000, "the child should have appended a fair amount")
        #expect(rounds.contains { !$0.received.isEmpty }, "some rounds consume and acknowledge")
        let lost = accepted.filter { seen[$0] == nil }.sorted()
        #expect(lost.isEmpty, "accepted events lost: \(lost.prefix(20))")
        let foreign = seen.keys.filter { !accepted.contains($0) && !unannounced.contains($0) }.sorted()
        #expect(foreign.isEmpty, "events that were never appended: \(foreign.prefix(20))")
        let duplicated = seen.filter { $0.value > 1 }
        let badDuplicates = duplicated.filter { !inFlight.contains($0.key) || $0.value > 2 }.keys.sorted()
        #expect(badDuplicates.isEmpty, "duplicates outside a batch in flight: \(badDuplicates.prefix(20))")
        #expect(zip(drained, drained.dropFirst()).allSatisfy { $0 < $1 }, "delivery keeps append order")

        // A kill can cut a write short (torn tail, repaired); nothing else may ever be reported.
        let reported = rounds.flatMap(\.errors) + log.all.map { "\($0)" }
        #expect(reported.allSatisfy { $0.contains("incomplete record") }, "unexpected repairs: \(reported)")
        #expect(!queue.hasPendingEvents)
    }

    @Test func anotherProcessHoldingTheQueueGetsTheLockErrorUntilItDies() throws {
        let dir = QueueTestDirectory()
        let holder = try QueueChildProcess(arguments: ["hold", dir.queuePath])
        #expect(try holder.readLine() == "ready")
        #expect(throws: QueueError.locked(path: dir.queuePath + "/LOCK", holderPID: holder.pid)) {
            try DurableQueue(directory: dir.queuePath)
        }
        holder.killAndReap()
        let queue = try DurableQueue(directory: dir.queuePath)
        try queue.append(queueTestEvent(7))
        #expect(try drainQueue(queue) == [7])
    }
}
