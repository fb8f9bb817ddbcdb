import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A stand-in for an in-process Swift destination, the baseline a native hook call is compared to.
protocol BenchmarkDestination: AnyObject {
    func track(_ event: Event) -> Event?
}

@inline(never) func opaqueTrue() -> Bool { true }

final class SwiftNoOpDestination: BenchmarkDestination {
    @inline(never) func track(_ event: Event) -> Event? { event }
}

/// Measures what the ABI costs: opening libraries, and one hook call. Prints the numbers (run
/// with `swift test -c release -Xswiftc -enable-testing --filter LoaderBenchmark` for real ones)
/// and checks only loose bounds, so a slow shared machine does not fail it.
@Suite(.serialized) struct LoaderBenchmarkTests {
    @Test func twentyLibrariesOpenAndNegotiateQuickly() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        for i in 1...20 {
            let key = "Noop\(i < 10 ? "0" : "")\(i)"
            try FixtureBuilder.library("noop", in: dir, as: "lib\(key.lowercased()).so", defines: ["KEY=\"\(key)\""])
        }
        let clock = ContinuousClock()
        var result: PluginLoader.ScanResult?
        let elapsed = clock.measure { result = PluginLoader().scan(directory: dir) }
        #expect(result?.libraries.count == 20)
        #expect(result?.problems.isEmpty == true)
        let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3
        print("loader benchmark: scan + dlopen + negotiate of 20 no-op libraries: \(String(format: "%.2f", ms)) ms (\(String(format: "%.0f", ms * 1000 / 20)) µs per library)")
        #expect(ms < 2000)
    }

    @Test func oneTrackHookCallCostsAboutAsMuchAsASwiftDestination() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("noop", in: dir))
        let native = try library.makeInstance(services: RecordingHost().services)
        var event = Event.make(.track, ["event": "Benchmark", "properties": ["n": 1, "s": "some text"]])
        event.shareEncoding()  // as the pipeline does before fanning out
        _ = event.serializedBytes  // the first destination fills it

        let swiftDestination: any BenchmarkDestination = SwiftNoOpDestination()
        let iterations = 2_000_000
        let clock = ContinuousClock()

        func nanosecondsPerCall(_ body: () -> Bool) -> Double {
            var best = Double.infinity
            for _ in 0..<3 {
                var failures = 0
                let elapsed = clock.measure {
                    for _ in 0..<iterations where !body() { failures += 1 }
                }
                #expect(failures == 0)
                let ns = (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(iterations)
                best = min(best, ns)
            }
            return best
        }

        let loopNs = nanosecondsPerCall { opaqueTrue() }
        let swiftNs = nanosecondsPerCall { swiftDestination.track(event) != nil }
        let nativeNs = nanosecondsPerCall { native.deliver(event).isOK }
        print("loader benchmark: track hook on the no-op library: \(String(format: "%.1f", nativeNs)) ns/call; in-process Swift no-op destination: \(String(format: "%.1f", swiftNs)) ns/call; ratio \(String(format: "%.2f", nativeNs / swiftNs)); loop + one empty non-inlined call: \(String(format: "%.1f", loopNs)) ns")
        #expect(nativeNs < 5_000)
    }
}
