import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Plugins/PostHog asks for the host's durable queue (ABI 1.3 AH_EXT_DURABLE, through the kit's
/// `DurableEvents`) and answers each event only when PostHog acknowledged the request that
/// carried it (finish later). A child tracking into it is SIGKILLed mid-stream several times while
/// the PostHog fake answers slowly; after a restart on the same storage every event `track()`
/// returned for is in PostHog, and an event sent twice (its request was in flight at a kill)
/// carries the same `uuid` (from the messageId), so PostHog counts it once.
@Suite(.serialized) struct PostHogDurabilityTests {
    static let kills = 3

    @Test(arguments: [IsolationMode.inProcess, .process])
    func killedChildrenLoseNothingAndPostHogCountsEachEventOnce(mode: IsolationMode) throws {
        _ = try SwiftPluginFiles.load("PostHogIntegration")  // fails with the reason when not built or stale
        let plugins = (SwiftPluginFiles.path("PostHogIntegration") as NSString).deletingLastPathComponent
        let fake = try PostHogFake()
        defer { fake.server.stop() }
        fake.responseDelay = 0.15
        var settings: JSONObject = ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)]
        if mode == .process { settings["isolation"] = "process" }
        let storage = makeTempDirectory("posthog-crash")
        let crash = DurableCrashRounds(plugins: plugins, key: "PostHog", settings: settings, storage: storage,
                                       requestCount: { fake.server.requestCount }, openConnections: { fake.server.openConnectionCount })
        let (rounds, childErrors) = try crash.run(kills: Self.kills)
        let accepted = DurableCrashRounds.accepted(rounds)
        #expect(accepted.count >= Self.kills * 200, "the children got that far: \(rounds.map(\.accepted))")
        #expect(FileManager.default.fileExists(atPath: storage + "/destinations/PostHog"), "the library asked for the durable queue")

        let restart = try crash.restart()
        #expect(restart.queued == 0, "the restart delivers the whole backlog")

        // PostHog keeps the first event of each uuid.
        let events = fake.events
        var firstOfUUID: [String: Int] = [:]
        var uuidsOfIndex: [Int: Set<String>] = [:]
        var ingested: [Int] = []
        for event in events {
            guard let index = event["properties"]?["index"]?.intValue else { continue }
            ingested.append(index)
            guard let uuid = event["uuid"]?.stringValue else { Issue.record("an event without uuid: \(index)"); continue }
            uuidsOfIndex[index, default: []].insert(uuid)
            if let earlier = firstOfUUID[uuid] {
                #expect(earlier == index, "uuid \(uuid) carried two events: \(earlier) and \(index)")
            } else {
                firstOfUUID[uuid] = index
            }
        }
        let counted = Array(firstOfUUID.values)
        let lost = accepted.subtracting(counted)
        #expect(lost.isEmpty, "\(lost.count) of \(accepted.count) accepted events are not in PostHog, e.g. \(Array(lost.sorted().prefix(10)))")
        #expect(DurableCrashRounds.foreign(ingested, rounds).isEmpty)
        let twice = uuidsOfIndex.filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "an event PostHog counts twice (a resent event with another uuid): \(Array(twice.keys.sorted().prefix(5)))")
        #expect(ingested.count - counted.count <= Self.kills * 4 * 2000, "resent only what was in flight at the kills")
        #expect(fake.refused.isEmpty, "\(fake.refused.prefix(3))")
        #expect(childErrors.isEmpty, "\(childErrors.count) errors: \(childErrors.prefix(3))")
        #expect(restart.errors.isEmpty, "\(restart.errors.count) errors: \(restart.errors.prefix(3))")
    }
}
