import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Plugins/Amplitude asks for the host's durable queue (ABI 1.3 AH_EXT_DURABLE) and answers each
/// event only when Amplitude acknowledged the upload that carried it (finish later). A child
/// tracking into it is SIGKILLed mid-stream several times while the strict Amplitude fake answers
/// slowly; after a restart on the same storage every event `track()` returned for is in
/// Amplitude, and an event sent twice (its upload was in flight at a kill) carries the same
/// insert_id (the messageId), so Amplitude counts it once.
@Suite(.serialized) struct AmplitudeDurabilityTests {
    static let kills = 3

    @Test(arguments: [IsolationMode.inProcess, .process])
    func killedChildrenLoseNothingAndAmplitudeCountsEachEventOnce(mode: IsolationMode) throws {
        let library = try AmplitudeBuild.library(in: "")
        let plugins = (library as NSString).deletingLastPathComponent
        let fake = try AmplitudeFake()
        defer { fake.server.stop() }
        fake.responseDelay = 0.15
        var settings: JSONObject = ["apiKey": .string(fake.apiKey), "apiHost": .string(fake.baseURL)]
        if mode == .process { settings["isolation"] = "process" }
        let storage = makeTempDirectory("amplitude-crash")
        let crash = DurableCrashRounds(plugins: plugins, key: "Amplitude", settings: settings, storage: storage,
                                       requestCount: { fake.server.requestCount }, openConnections: { fake.server.openConnectionCount })
        let (rounds, childErrors) = try crash.run(kills: Self.kills)
        let accepted = DurableCrashRounds.accepted(rounds)
        #expect(accepted.count >= Self.kills * 200, "the children got that far: \(rounds.map(\.accepted))")
        #expect(FileManager.default.fileExists(atPath: storage + "/destinations/Amplitude"), "the library asked for the durable queue")

        let restart = try crash.restart()
        #expect(restart.queued == 0, "the restart delivers the whole backlog")

        func index(_ event: JSONObject) -> Int? { event["event_properties"]?["index"]?.intValue }
        let ingested = fake.events.compactMap(index)
        let counted = fake.uniqueEvents.compactMap(index)
        let lost = accepted.subtracting(counted)
        #expect(lost.isEmpty, "\(lost.count) of \(accepted.count) accepted events are not in Amplitude, e.g. \(Array(lost.sorted().prefix(10)))")
        #expect(DurableCrashRounds.foreign(ingested, rounds).isEmpty)
        #expect(Set(counted).count == counted.count, "an event Amplitude counts twice (a resent event with another insert_id)")
        #expect(ingested.count - counted.count <= Self.kills * 4 * 2000, "resent only what was in flight at the kills")
        #expect(fake.refused.isEmpty, "\(fake.refused.prefix(3))")
        #expect(childErrors.isEmpty, "\(childErrors.count) errors: \(childErrors.prefix(3))")
        #expect(restart.errors.isEmpty, "\(restart.errors.count) errors: \(restart.errors.prefix(3))")
    }
}
