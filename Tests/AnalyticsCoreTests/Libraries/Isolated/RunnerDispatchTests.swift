import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A library whose work waits on libdispatch's global queue (as Swift code using
/// DispatchQueue.global() or a Task does) runs in the jail as in this process: libdispatch's
/// once-a-second check of its workers reads /proc/<tid>/stat, which the runner must let it read.
@Suite struct RunnerDispatchTests {
    @Test(arguments: [IsolationMode.inProcess, .process])
    func workWaitingOnTheGlobalQueueForOverASecondDoesNotEndTheRunner(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "global_queue", key: "GlobalQueue",
                                         settings: ["blocks": 8, "block_ms": 700], mode: mode)
        c.track(2)
        #expect(c.analytics.flush())
        let stats = try #require(c.stats)
        #expect(stats.delivered == 2 && stats.failed == 0 && stats.abandoned == 0, "\(c.errors.messages)")
        #expect(stats.restarts == 0, "\(c.errors.messages)")
        _ = c.analytics.shutdown()
        #expect(c.errors.messages.isEmpty, "\(c.errors.messages)")
    }
}
