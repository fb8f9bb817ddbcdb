import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A loaded library's `send_event` answered AH_OK must mean what `track()` returning means: the
/// event is safe. `segment-crash-child` loads the EchoDurable fixture (Tests/Fixtures/echo_durable.c),
/// which sends four events back for every tracked one and writes "k <echo>" to the pipe after each
/// AH_OK; the child is SIGKILLed at random moments while the sent-back events are still being run
/// through the pipeline. A restart on the same storage must upload every acknowledged echo.
@Suite(.serialized) struct SentBackCrashTests {
    static let kills = 4

    @Test func eventsAnsweredOKSurviveSIGKILL() throws {
        let plugins = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(plugins) }
        try FixtureBuilder.library("echo_durable", in: plugins)
        let storage = makeTempDirectory("sent-back-crash")
        // Uploads hang: every event stays on disk (or in the journal) until the restart.
        let hung = try LoopbackHTTPServer()
        hung.defaultResponse = .hang
        defer { hung.stop() }

        var acknowledged = Set<Int>()
        var childErrors: [String] = []
        for number in 0..<Self.kills {
            let child = try SegmentCrashChildProcess(storage: storage, apiHost: "\(hung.baseURL)/v1", first: number * 1_000_000,
                                                     count: 1_000_000, flushAt: 100, plugins: (plugins, "EchoDurable"))
            let killAt = Int.random(in: 200...3_000)
            var answered = 0
            try child.readUntil { line in
                if line.hasPrefix("k ") { answered += 1 }
                return answered >= killAt
            }
            child.killAndReap()
            acknowledged.formUnion(child.lines.compactMap { $0.hasPrefix("k ") ? Int($0.dropFirst(2)) : nil })
            childErrors += child.errors
        }
        #expect(acknowledged.count >= 500, "the children got that far")

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let (analytics, errors) = try SegmentHarness.restarted(storage: storage, uploadingTo: server)
        analytics.flush()  // the journal's leftovers ran at start; flush waits for them
        let segment = try #require(analytics.find(key: "Segment.io") as? SegmentDestination)
        #expect(segment.drain(timeout: 120), "\(segment.pendingEvents) left")
        analytics.shutdown()

        var echoes = Set<Int>()
        for batch in try server.batches() {
            guard case .object(let body) = try JSON(parsing: batch.request.body) else { continue }
            for event in body["batch"]?.arrayValue ?? [] where event["event"]?.stringValue == "Echo" {
                if let echo = event["properties"]?["echo"]?.doubleValue { echoes.insert(Int(echo)) }
            }
        }
        let lost = acknowledged.subtracting(echoes)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) events answered AH_OK never arrived, e.g. \(lost.sorted().prefix(10))")
        // The loop tracks faster than the library takes events: its queue drops the oldest (the
        // app default), and those are never echoed. Nothing else may be reported.
        let unexpected = childErrors.filter { !$0.contains("destination EchoDurable: queue full") }
        #expect(unexpected.isEmpty, "\(unexpected.prefix(5))")
        #expect(!FileManager.default.fileExists(atPath: storage + "/sent-back"), "the journal is removed once empty")
        #expect(errors.messages.allSatisfy { !$0.contains("lost") && !$0.contains("dropped") }, "\(errors.messages.prefix(5))")
    }
}
