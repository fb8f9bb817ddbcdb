import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// What an earlier run left in a durable destination's queue (real segment files, written with
/// the queue the host uses) is handed to the next instance after its initial settings and before
/// this run's events, a flush covers it, and what was handed over leaves the disk. Without the
/// durable queue (today's main) nobody reads those files and the events never arrive.
@Suite struct DurableDestinationTests {
    @Test(arguments: [IsolationMode.inProcess, .process])
    func whatAnEarlierRunLeftComesAfterTheSettingsAndBeforeThisRunsEvents(mode: IsolationMode) throws {
        let leftOver = Locked<String?>(nil)
        let client = try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "parity_probe", name: "parity")],
                                         settings: ["integrations": ["Parity": ["mark": "one", "durable": true]]], mode: mode) { c in
            // An earlier run on this storage accepted two events and ended before handing them over.
            let directory = c.storageDirectory + "/destinations/Parity"
            leftOver.withLock { $0 = directory }
            guard let queue = try? DurableQueue(directory: directory) else { return }
            try? queue.append(#"{"type":"track","event":"Old1","messageId":"m-old-1","anonymousId":"a1"}"#)
            try? queue.append(#"{"type":"track","event":"Old2","messageId":"m-old-2","anonymousId":"a1"}"#)
            try? queue.close()
        }
        let analytics = client.analytics
        analytics.track("New")
        #expect(analytics.flush())
        let stats = try #require(analytics.timeline.stats(forKey: "Parity"))
        #expect(stats.received == 3 && stats.delivered == 3, "the backlog is offered and delivered: \(stats.received) \(stats.delivered)")
        #expect(stats.queued == 0)
        _ = analytics.shutdown()
        let calls = client.lines(of: "Parity").filter { !$0.hasPrefix("create") }
        #expect(Array(calls.prefix(5)) == ["started", "update initial mark=one", "track Old1", "track Old2", "track New"], "\(calls)")
        let directory = try #require(leftOver.withLock { $0 })
        let queue = try DurableQueue(directory: directory)
        #expect(queue.pendingEvents == 0, "handed over and answered: crossed off")
        try queue.close()
        #expect(client.errors.messages.isEmpty, "\(client.errors.messages)")
    }
}
