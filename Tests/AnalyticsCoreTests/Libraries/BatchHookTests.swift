import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// ABI 1.3 `AH_EXT_BATCH` with a real library (Tests/Fixtures/batch_sink.c: no single-event
/// hooks, one log line per call naming its events), in-process and in a runner process.
@Suite struct BatchHookTests {
    /// The events each call carried, by name.
    static func calls(_ c: FixtureLibraryClient) -> [[String]] {
        c.lines.compactMap { line in
            guard line.hasPrefix("events n="), let names = line.split(separator: " ").last?.dropFirst("names=".count) else { return nil }
            return names.split(separator: ",").map(String.init)
        }
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func eventsOfEveryTypeArriveInOrderManyPerCallAndBeforeTheFlush(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "batch_sink", key: "BatchSink", settings: [:], mode: mode, defines: ["MAX_EVENTS=4"])
        c.analytics.identify(userId: "u1")
        c.track(8)
        c.analytics.screen("Home")
        #expect(c.analytics.flush())
        let calls = Self.calls(c)
        #expect(calls.joined().map { $0 } == ["identify"] + (0..<8).map { "E\($0)" } + ["screen"])
        #expect(calls.allSatisfy { $0.count <= 4 })
        #expect(calls.count < 10)
        // Everything reached the library before its flush.
        let lines = c.lines.filter { $0 == "flush" || $0.hasPrefix("events ") }
        #expect(lines.last == "flush")
        #expect(c.stats?.failed == 0)
        #expect(c.stats?.delivered == 10)
        _ = c.analytics.shutdown()
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aStatusPerEventRetriesOnlyTheRetryableAndReportsThePermanent(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "batch_sink", key: "BatchSink", settings: [:], mode: mode)
        c.analytics.track("A")
        c.analytics.track("B", properties: ["fail": "once"])
        c.analytics.track("C", properties: ["fail": "permanent"])
        c.analytics.track("D")
        #expect(c.analytics.flush())
        let calls = Self.calls(c)
        #expect(calls.joined().filter { $0 == "B" }.count == 2)
        #expect(calls.joined().filter { $0 == "A" || $0 == "D" }.count == 2)
        #expect(calls.contains(["B"]))
        #expect(c.stats?.failed == 1)
        // As a single-event call's failure counts: delivered (handed over) and failed, not dropped.
        #expect(c.stats?.delivered == 4 && c.stats?.dropped == 0)
        #expect(c.errors.messages.filter { $0.contains("track failed: refused by the vendor") }.count == 1)
        _ = c.analytics.shutdown()
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func oneStatusForAllRetriesTheWholeCallInOrder(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "batch_sink", key: "BatchSink", settings: [:], mode: mode)
        c.analytics.track("A")
        c.analytics.track("B", properties: ["fail": "all"])
        c.analytics.track("C")
        #expect(c.analytics.flush())
        let calls = Self.calls(c).filter { $0.contains("B") }
        #expect(calls.count == 2)
        #expect(calls.first == calls.last)
        #expect(c.stats?.failed == 0)
        #expect(c.errors.messages.isEmpty)
        _ = c.analytics.shutdown()
    }
}
