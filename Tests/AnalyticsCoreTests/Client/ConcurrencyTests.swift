import Foundation
import Testing
@testable import AnalyticsCore

/// A destination that blocks on a semaphore until released.
final class BlockingDestination: DestinationPlugin {
    let key: String
    let timeline = Timeline()
    let gate = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)
    private let count = Locked(0)
    init(_ key: String) { self.key = key }
    var received: Int { count.withLock { $0 } }
    func execute(_ event: Event) -> Event? {
        let first = count.withLock { c -> Bool in c += 1; return c == 1 }
        if first { entered.signal(); gate.wait() }
        return event
    }
}

@Suite struct ConcurrencyTests {
    @Test func eightThreadsTenThousandEventsEachInOrderPerDestination() throws {
        let (analytics, errors) = makeClient(["A", "B", "C"]) { $0.destinationQueueCapacity = 100_000 }
        let dests = ["A", "B", "C"].map(RecordingDestination.init)
        for d in dests { analytics.add(plugin: d) }
        let threads = 8, perThread = 10_000
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread { analytics.track("t\(t)", properties: ["i": .number(Double(i))]) }
        }
        #expect(analytics.flush())
        #expect(errors.all.isEmpty)
        let reference = dests[0].events.map(\.messageId)
        for d in dests {
            let events = d.events
            #expect(events.count == threads * perThread)
            // Every destination saw the same global order…
            #expect(events.map(\.messageId) == reference)
            // …and each caller's events in the order it made them.
            var last = [String: Double]()
            for e in events {
                let i = e.properties["i"]!.doubleValue!
                #expect(i > last[e.event!, default: -1])
                last[e.event!] = i
            }
        }
    }

    @Test func aBlockedDestinationSlowsNobody() throws {
        let (analytics, _) = makeClient(["Slow", "Fast"]) { $0.destinationQueueCapacity = 50_000; $0.flushTimeout = 0.2 }
        let slow = BlockingDestination("Slow")
        let fast = RecordingDestination("Fast")
        analytics.add(plugin: slow)
        analytics.add(plugin: fast)
        analytics.track("first")
        slow.entered.wait()  // the slow destination is now stuck inside its hook
        // Every call returns while Slow is still stuck: were callers held by it, this would hang.
        for i in 0..<20_000 { analytics.track("e\(i)") }
        // flush gives up on Slow after its bounded wait but Fast has everything.
        #expect(analytics.flush() == false)
        #expect(fast.events.count == 20_001)
        #expect(slow.received == 1)
        slow.gate.signal()
        #expect(analytics.timeline.flush(timeout: 10))
        #expect(slow.received == 20_001)
    }

    @Test func overflowDropsTheOldestAndReportsIt() throws {
        let (analytics, errors) = makeClient(["Slow"]) { $0.destinationQueueCapacity = 100; $0.flushTimeout = 10 }
        let slow = BlockingDestination("Slow")
        analytics.add(plugin: slow)
        analytics.track("first")
        slow.entered.wait()
        for i in 0..<500 { analytics.track("e\(i)") }
        slow.gate.signal()
        #expect(analytics.flush())
        #expect(slow.received == 101, "the first event plus the newest 100")
        let stats = try #require(analytics.timeline.stats(forKey: "Slow"))
        #expect(stats.overflowed == 400)
        let overflow = errors.all.compactMap { e -> Int? in
            if case .queueOverflow(let d, let n, let cap) = e, d == "Slow", cap == 100 { return n }
            return nil
        }
        #expect(overflow.reduce(0, +) == 400)
        #expect(errors.messages.first?.contains("destination Slow: queue full (100 events)") == true)
    }
}

@Suite struct BackpressureTests {
    @Test func waitPolicyHoldsTheCallerInsteadOfDropping() throws {
        let (analytics, errors) = makeClient(["Slow"]) {
            $0.destinationQueueCapacity = 10
            $0.destinationOverflow = .wait(seconds: 30)
        }
        let slow = BlockingDestination("Slow")
        analytics.add(plugin: slow)
        analytics.track("first")
        slow.entered.wait()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for i in 0..<1_000 { analytics.track("e\(i)") }
            done.signal()
        }
        // The caller is held while the destination is stuck…
        #expect(done.wait(timeout: .now() + 0.3) == .timedOut)
        slow.gate.signal()
        // …and released as it drains; nothing is dropped.
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(analytics.flush())
        #expect(slow.received == 1_001)
        #expect(analytics.timeline.stats(forKey: "Slow")?.overflowed == 0)
        #expect(errors.all.isEmpty)
    }
}
