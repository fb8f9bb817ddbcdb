import AnalyticsCore
import Foundation

/// Loaded C destinations against in-process Swift ones doing the same nothing, the whole pipeline
/// (`track()` until every destination has every event): one destination whose library takes one
/// event per call, one whose library takes them in batches (ABI 1.3 `AH_EXT_BATCH`), and ten of
/// each kind. The setups alternate within this one process, `rounds` times, and the best of each
/// is kept, so that what the other processes of a shared machine do at some moment does not
/// decide a ratio.
struct LoadedDestinationComparison {
    typealias Run = (eventsPerSecond: Double, microsecondsPerEvent: Double, cpuMicrosecondsPerEvent: Double)
    static let none: Run = (0, .infinity, .infinity)
    var swiftOne = none, nativeOne = none, batchOne = none
    var swiftTen = none, nativeTen = none, batchTen = none

    static func measure(one: String, oneBatch: String, ten: String, tenBatch: String, rounds: Int = 3,
                        eventsOne: Int = 300_000, eventsTen: Int = 200_000) -> LoadedDestinationComparison {
        var c = LoadedDestinationComparison()
        // The best wall time and, apart, the least CPU time (every thread) of each setup.
        func keep(_ best: inout Run, _ run: Run) {
            if run.microsecondsPerEvent < best.microsecondsPerEvent { best = (run.0, run.1, best.2) }
            best.cpuMicrosecondsPerEvent = min(best.cpuMicrosecondsPerEvent, run.cpuMicrosecondsPerEvent)
        }
        for _ in 0..<rounds {
            keep(&c.swiftOne, timelineBenchmarkWithCPU(destinations: 1, events: eventsOne))
            keep(&c.nativeOne, timelineBenchmarkWithCPU(destinations: 1, events: eventsOne, loadedFrom: one))
            keep(&c.batchOne, timelineBenchmarkWithCPU(destinations: 1, events: eventsOne, loadedFrom: oneBatch))
            keep(&c.swiftTen, timelineBenchmarkWithCPU(destinations: 10, events: eventsTen))
            keep(&c.nativeTen, timelineBenchmarkWithCPU(destinations: 10, events: eventsTen, loadedFrom: ten))
            keep(&c.batchTen, timelineBenchmarkWithCPU(destinations: 10, events: eventsTen, loadedFrom: tenBatch))
        }
        return c
    }

    func addRows(to table: BenchTable) {
        table.add("whole pipeline, 1 loaded no-op C integration vs 1 in-process: µs/event",
                  String(format: "%.2f vs %.2f (ratio %.2f)", nativeOne.microsecondsPerEvent, swiftOne.microsecondsPerEvent,
                         nativeOne.microsecondsPerEvent / swiftOne.microsecondsPerEvent), target: "ratio ≤ 1.5")
        table.add("whole pipeline, 1 loaded C destination with the batch hook vs 1 in-process Swift destination: µs/event",
                  String(format: "%.2f vs %.2f (ratio %.2f)", batchOne.microsecondsPerEvent, swiftOne.microsecondsPerEvent,
                         batchOne.microsecondsPerEvent / swiftOne.microsecondsPerEvent), target: "ratio ≤ 1.1")
        table.add("K=10 loaded C destinations vs K=10 in-process: events/s",
                  "\(formatRate(nativeTen.eventsPerSecond)) vs \(formatRate(swiftTen.eventsPerSecond)) "
                    + String(format: "(%.0f %%)", nativeTen.eventsPerSecond / swiftTen.eventsPerSecond * 100), target: "≥ 80 %")
        table.add("  the same with the batch hook: events/s",
                  "\(formatRate(batchTen.eventsPerSecond)) vs \(formatRate(swiftTen.eventsPerSecond)) "
                    + String(format: "(%.0f %%)", batchTen.eventsPerSecond / swiftTen.eventsPerSecond * 100), target: "≥ 80 %")
        table.add("  CPU µs/event (every thread), K=1 loaded / with the batch hook / in-process",
                  String(format: "%.2f / %.2f / %.2f", nativeOne.cpuMicrosecondsPerEvent, batchOne.cpuMicrosecondsPerEvent,
                         swiftOne.cpuMicrosecondsPerEvent))
        table.add("  CPU µs/event (every thread), K=10 loaded / with the batch hook / in-process",
                  String(format: "%.2f / %.2f / %.2f", nativeTen.cpuMicrosecondsPerEvent, batchTen.cpuMicrosecondsPerEvent,
                         swiftTen.cpuMicrosecondsPerEvent))
    }
}

/// The four libraries directories the comparison needs (one and ten of each fixture).
func withLoadedDestinationLibraries<R>(_ body: (_ one: String, _ oneBatch: String, _ ten: String, _ tenBatch: String) -> R) -> R {
    let one = buildNoOpLibraries(count: 1), oneBatch = buildNoOpLibraries(count: 1, fixture: "noop_batch")
    let ten = buildNoOpLibraries(count: 10), tenBatch = buildNoOpLibraries(count: 10, fixture: "noop_batch")
    defer { for dir in [one, oneBatch, ten, tenBatch] { try? FileManager.default.removeItem(atPath: dir) } }
    return body(one, oneBatch, ten, tenBatch)
}
