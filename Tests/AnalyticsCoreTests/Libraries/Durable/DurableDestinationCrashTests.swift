import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// "Accepted means safe" for a library that batches: Tests/Fixtures/batcher.c holds events
/// (finish later) and POSTs them through the host (AH_EXT_HTTP_REQUESTS) to a loopback vendor
/// that answers slowly; its settings ask for the durable queue (`"durable": true`). The child
/// that tracks into it is SIGKILLed mid-stream several times on the same storage; a restart must
/// then deliver every event whose `track()` had returned, with duplicates only from uploads in
/// flight at a kill. Without the durable queue the events the library held, and those queued in
/// memory behind it, die with the process.
@Suite(.serialized) struct DurableDestinationCrashTests {
    static let kills = 4
    /// Uploads running at once per instance (the host's bound, 4), plus as many answered whose
    /// events the kill found not yet crossed off.
    static let inFlightBound = 8

    /// The `index` of every event of each request, in arrival order.
    static func indices(_ requests: [RecordedRequest]) -> [[Int]] {
        requests.map { request in
            guard case .array(let events)? = try? JSON(parsing: request.body) else { return [] }
            return events.compactMap { $0["properties"]?["index"]?.intValue }
        }
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func killedChildrenLoseNoAcceptedEvent(mode: IsolationMode) throws {
        let plugins = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(plugins) }
        // Room for every call the host may hand it (25,000 held calls): with the fixture's own
        // 2,048 it answered the rest retryable ("holding 2048 events already"), and after four
        // attempts the host failed one for good.
        try FixtureBuilder.library("batcher", in: plugins, defines: ["MAX_HELD=32768"])
        let storage = makeTempDirectory("durable-crash")
        // A slow vendor: each upload is answered a while after it arrived.
        let server = try LoopbackHTTPServer(options: .init(respond: { _ in
            Thread.sleep(forTimeInterval: 0.15)
            return nil
        }))
        defer { server.stop() }
        // Uploads never time out (a retried upload the vendor had received is a duplicate too,
        // legitimately, but not what this test counts).
        var settings: JSONObject = ["url": .string(server.baseURL + "/batch"), "batch": 50, "timeout_ms": 120_000, "durable": true]
        if mode == .process { settings["isolation"] = "process" }
        let crash = DurableCrashRounds(plugins: plugins, key: "Batcher", settings: settings, storage: storage,
                                       requestCount: { server.requestCount }, openConnections: { server.openConnectionCount })
        let (rounds, childErrors) = try crash.run(kills: Self.kills)
        let accepted = DurableCrashRounds.accepted(rounds)
        #expect(accepted.count >= Self.kills * 200, "the children got that far: \(rounds.map(\.accepted))")
        #expect(FileManager.default.fileExists(atPath: storage + "/destinations/Batcher"), "the queue lives under the storage directory")

        let restart = try crash.restart()
        #expect(restart.queued == 0, "the restart delivers the whole backlog")

        let perRequest = Self.indices(server.requests)
        let seen = Dictionary(perRequest.joined().map { ($0, 1) }, uniquingKeysWith: +)
        let lost = accepted.filter { seen[$0] == nil }
        #expect(lost.isEmpty, "\(lost.count) of \(accepted.count) accepted events lost, e.g. \(Array(lost.sorted().prefix(10)))")
        #expect(DurableCrashRounds.foreign(seen.keys, rounds).isEmpty)
        // An event may come once more for each kill that found its upload in flight: one of the
        // last uploads the vendor received from that child.
        var inFlight: [Int: Int] = [:]
        for round in rounds {
            let last = perRequest[max(round.requestsBefore, round.requestsAtKill - Self.inFlightBound)..<round.requestsAtKill]
            for index in Set(last.joined()) { inFlight[index, default: 0] += 1 }
        }
        let badDuplicates = seen.filter { index, copies in copies > 1 + (inFlight[index] ?? 0) }
        let example = badDuplicates.keys.min() ?? 0
        let whereSeen = perRequest.indices.filter { perRequest[$0].contains(example) }
        #expect(badDuplicates.isEmpty, "\(badDuplicates.count) duplicates outside an upload in flight, e.g. \(example) in requests \(whereSeen); rounds \(rounds.map { ($0.requestsBefore, $0.requestsAtKill) }) of \(perRequest.count)")
        #expect(childErrors.isEmpty, "\(childErrors.count) errors: \(childErrors.prefix(3))")
        #expect(restart.errors.isEmpty, "\(restart.errors.count) errors: \(restart.errors.prefix(3))")
    }
}
