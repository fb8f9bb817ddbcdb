import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Plugins/GoogleAnalytics4 asks for the host's durable queue (ABI 1.3 AH_EXT_DURABLE, through
/// the kit's `DurableEvents`) and answers each event only when GA4 answered the request that
/// carried it (finish later). A child tracking into it is SIGKILLed mid-stream several times while
/// the GA4 fake answers slowly; after a restart on the same storage every event `track()` returned
/// for is in GA4. The Measurement Protocol has no de-duplication id: an event in flight at a kill
/// may arrive twice, so the test asks that each accepted event arrives at least once and that
/// only what could have been in flight arrives again.
@Suite(.serialized) struct GA4DurabilityTests {
    static let kills = 3

    @Test(arguments: [IsolationMode.inProcess, .process])
    func killedChildrenLoseNothing(mode: IsolationMode) throws {
        _ = try SwiftPluginFiles.load("GoogleAnalytics4Integration")  // fails with the reason when not built or stale
        let plugins = (SwiftPluginFiles.path("GoogleAnalytics4Integration") as NSString).deletingLastPathComponent
        let fake = try GA4Fake()
        defer { fake.server.stop() }
        fake.responseDelay = 0.15
        var settings: JSONObject = ["measurementId": .string(fake.streamId), "apiSecret": .string(fake.apiSecret), "apiHost": .string(fake.baseURL)]
        if mode == .process { settings["isolation"] = "process" }
        let storage = makeTempDirectory("ga4-crash")
        let key = "Google Analytics 4"
        let crash = DurableCrashRounds(plugins: plugins, key: key, settings: settings, storage: storage,
                                       requestCount: { fake.server.requestCount }, openConnections: { fake.server.openConnectionCount })
        let (rounds, childErrors) = try crash.run(kills: Self.kills)
        let accepted = DurableCrashRounds.accepted(rounds)
        #expect(accepted.count >= Self.kills * 200, "the children got that far: \(rounds.map(\.accepted))")
        #expect(FileManager.default.fileExists(atPath: storage + "/destinations/" + key), "the library asked for the durable queue")

        let restart = try crash.restart()
        #expect(restart.queued == 0, "the restart delivers the whole backlog")

        let ingested = fake.events.compactMap { $0["params"]?["index"]?.intValue }
        let lost = accepted.subtracting(ingested)
        #expect(lost.isEmpty, "\(lost.count) of \(accepted.count) accepted events are not in GA4, e.g. \(Array(lost.sorted().prefix(10)))")
        #expect(DurableCrashRounds.foreign(ingested, rounds).isEmpty)
        #expect(ingested.count - Set(ingested).count <= Self.kills * 4 * 2000, "resent only what was in flight at the kills")
        #expect(fake.violations.isEmpty, "\(fake.violations.prefix(3))")
        #expect(childErrors.isEmpty, "\(childErrors.count) errors: \(childErrors.prefix(3))")
        #expect(restart.errors.isEmpty, "\(restart.errors.count) errors: \(restart.errors.prefix(3))")
    }
}
