import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Plugins/Mixpanel asks for the host's durable queue (ABI 1.3 AH_EXT_DURABLE) and answers each
/// call only when Mixpanel acknowledged the request that carried it (finish later). A child
/// tracking into it is SIGKILLed mid-stream several times while the strict Mixpanel fake answers
/// slowly; after a restart on the same storage every event `track()` returned for is in
/// Mixpanel, and an event sent twice (its request was in flight at a kill) carries the same
/// $insert_id (the messageId), so Mixpanel counts it once.
@Suite(.serialized) struct MixpanelDurabilityTests {
    static let kills = 3

    @Test(arguments: [IsolationMode.inProcess, .process])
    func killedChildrenLoseNothingAndMixpanelCountsEachEventOnce(mode: IsolationMode) throws {
        let library = try MixpanelBuild.library()
        let plugins = (library as NSString).deletingLastPathComponent
        let fake = try MixpanelFake()
        defer { fake.server.stop() }
        fake.responseDelay = 0.15
        var settings: JSONObject = ["projectToken": .string(fake.token), "apiSecret": .string(fake.apiSecret), "apiHost": .string(fake.baseURL)]
        if mode == .process { settings["isolation"] = "process" }
        let storage = makeTempDirectory("mixpanel-crash")
        let crash = DurableCrashRounds(plugins: plugins, key: "Mixpanel", settings: settings, storage: storage,
                                       requestCount: { fake.server.requestCount }, openConnections: { fake.server.openConnectionCount })
        let (rounds, childErrors) = try crash.run(kills: Self.kills)
        let accepted = DurableCrashRounds.accepted(rounds)
        #expect(accepted.count >= Self.kills * 200, "the children got that far: \(rounds.map(\.accepted))")
        #expect(FileManager.default.fileExists(atPath: storage + "/destinations/Mixpanel"), "the library asked for the durable queue")

        let restart = try crash.restart()
        #expect(restart.queued == 0, "the restart delivers the whole backlog")

        func index(_ event: JSONObject) -> Int? { event["properties"]?["index"]?.intValue }
        let ingested = fake.events.compactMap(index)
        let counted = fake.uniqueEvents.compactMap(index)
        let lost = accepted.subtracting(counted)
        #expect(lost.isEmpty, "\(lost.count) of \(accepted.count) accepted events are not in Mixpanel, e.g. \(Array(lost.sorted().prefix(10)))")
        #expect(DurableCrashRounds.foreign(ingested, rounds).isEmpty)
        #expect(Set(counted).count == counted.count, "an event Mixpanel counts twice (a resent event with another $insert_id)")
        #expect(fake.refused.isEmpty, "\(fake.refused.prefix(3))")
        #expect(childErrors.isEmpty, "\(childErrors.count) errors: \(childErrors.prefix(3))")
        #expect(restart.errors.isEmpty, "\(restart.errors.count) errors: \(restart.errors.prefix(3))")
    }
}
