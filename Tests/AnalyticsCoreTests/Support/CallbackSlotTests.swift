import Foundation
import Testing
@testable import AnalyticsCore

/// A callback called once per event must cost the same at the last event as at the first. A
/// closure kept in `Locked<(() -> Void)?>` did not: each access wrapped it in two more
/// reabstraction thunks, so after 20,000 events a call ran 40,000 frames deep (the durable vendor
/// libraries fell from 60,000 to 5,000 events/s). Measured here as the stack depth at the call.
@Suite struct CallbackSlotTests {
    private static func depth() -> Int { Thread.callStackReturnAddresses.count }

    @Test func theStackAtTheCallDoesNotGrowWithTheNumberOfCalls() {
        let slot = CallbackSlot()
        let depths = Locked<[Int]>([])
        slot.set { depths.withLock { $0.append(Self.depth()) } }
        for _ in 0..<5_000 { slot() }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 5_000)
        #expect(seen.first == seen.last, "depth at the first call \(seen.first ?? 0), at the last \(seen.last ?? 0)")
    }

    @Test func aDurableDestinationsWakeStaysFlatAcrossTheRun() {
        let completions = EventCompletions()
        let depths = Locked<[Int]>([])
        completions.wakes { depths.withLock { $0.append(Self.depth()) } }
        for ticket in 1...5_000 { completions.finish(UInt64(ticket)) }
        #expect(completions.drain().count == 5_000)
        let seen = depths.withLock { $0 }
        #expect(seen.count == 5_000 && seen.first == seen.last, "depth \(seen.first ?? 0) → \(seen.last ?? 0)")
    }
}
