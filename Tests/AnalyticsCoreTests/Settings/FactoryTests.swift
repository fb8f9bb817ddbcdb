import Foundation
import Testing
@testable import AnalyticsCore

/// Makes recording destinations and remembers them.
final class RecordingFactory: IntegrationFactory {
    let key: String
    let fail: Bool
    let made = Locked<[RecordingDestination]>([])
    init(_ key: String, fail: Bool = false) { self.key = key; self.fail = fail }
    func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin {
        if fail { throw EventError.invalid("factory refused: apiKey missing") }
        let d = RecordingDestination(key)
        made.withLock { $0.append(d) }
        return d
    }
}

@Suite struct FactoryTests {
    @Test func factoriesFollowTheSettings() throws {
        let a = RecordingFactory("A"), b = RecordingFactory("B")
        let (analytics, _) = makeClient(["A"]) { $0.integrationFactories = [a, b] }
        #expect(a.made.withLock { $0.count } == 1)
        #expect(b.made.withLock { $0.isEmpty }, "B is not in the settings: not created at all")
        analytics.track("one")
        analytics.update(settings: settings(enabling: ["B"]))
        analytics.track("two")
        #expect(analytics.flush())
        let madeA = try #require(a.made.withLock { $0.first })
        let madeB = try #require(b.made.withLock { $0.first })
        #expect(madeA.names == ["one"])
        #expect(madeA.recorded.shutdowns == 1, "removed by the refresh and shut down cleanly")
        #expect(madeB.names == ["two"])
        #expect(madeB.recorded.settings.map(\.1) == [.initial], "a destination made by a refresh starts with those settings")
        #expect(analytics.find(key: "A") == nil)
    }

    @Test func aFailingFactoryIsReportedAndOthersWork() throws {
        let bad = RecordingFactory("Bad", fail: true), good = RecordingFactory("Good")
        let (analytics, errors) = makeClient(["Bad", "Good"]) { $0.integrationFactories = [bad, good] }
        analytics.track("x")
        #expect(analytics.flush())
        #expect(errors.messages.contains { $0.contains("plugin Bad: could not be created") && $0.contains("apiKey missing") })
        #expect(good.made.withLock { $0.first?.names } == ["x"])
    }
}
