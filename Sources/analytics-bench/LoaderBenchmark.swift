import AnalyticsCore
import Foundation

/// Builds `count` copies of a no-op C integration (keys Dest0…) with gcc into a new directory:
/// `noop` (one event per call) or `noop_batch` (many per call, ABI 1.3 `AH_EXT_BATCH`).
func buildNoOpLibraries(count: Int, fixture: String = "noop") -> String {
    let dir = NSTemporaryDirectory() + "analytics-bench-plugins-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    for i in 0..<count {
        let gcc = Process()
        gcc.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
        gcc.arguments = ["-std=c99", "-shared", "-fPIC", "-O2", "-I", "include", "-DKEY=\"Dest\(i)\"",
                         "-o", "\(dir)/libdest\(i).so", "Tests/Fixtures/\(fixture).c"]
        try! gcc.run()
        gcc.waitUntilExit()
        benchCheck(gcc.terminationStatus == 0, "gcc failed building the no-op integration (run from the package root)")
    }
    return dir
}

/// Milliseconds to scan a directory of `count` libraries: dlopen, entry call, negotiation (best of 5,
/// each in a fresh copy of the files so the dynamic loader really opens them).
func loadTimeBenchmark(count: Int) -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let dir = buildNoOpLibraries(count: count)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = monotonicSeconds()
        let scan = PluginLoader().scan(directory: dir)
        let ms = (monotonicSeconds() - start) * 1000
        benchCheck(scan.libraries.count == count && scan.problems.isEmpty, "\(scan.problems)")
        best = min(best, ms)
    }
    return best
}

/// The bare cost of handing one event to a destination: the track hook of a loaded no-op C
/// library (event already encoded, as after fan-out) vs a call on an in-process Swift
/// destination. Best of three rounds of 2,000,000 calls each.
func hookCallBenchmark(library directory: String) -> (nativeNs: Double, swiftNs: Double) {
    let scan = PluginLoader().scan(directory: directory)
    guard let library = scan.libraries.first,
          let native = try? library.makeInstance(services: HostServices(log: { _, _ in }, sendEvent: { _ in .ok },
                                                                        userId: { nil }, anonymousId: { "a" })) else {
        return (.nan, .nan)
    }
    let swift = opaqueDestination()
    var event = try! Event(payload: ["type": "track", "event": "Benchmark", "anonymousId": "a",
                                     "properties": ["n": 1, "s": "some text"]])
    event.shareEncoding()  // as the pipeline hands it over: encoded once, shared
    let encoded = event.serializedBytes
    benchCheck(!encoded.isEmpty)
    func best(_ body: () -> Bool) -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = monotonicSeconds()
            var failures = 0
            for _ in 0..<2_000_000 where !body() { failures += 1 }
            benchCheck(failures == 0)
            best = min(best, (monotonicSeconds() - start) / 2_000_000 * 1e9)
        }
        return best
    }
    let shared = event
    let nativeNs = best { native.deliver(shared).isOK }
    let swiftNs = best { swift.execute(shared) != nil }
    native.destroy()
    return (nativeNs, swiftNs)
}

/// The in-process destination behind an opaque call, as the timeline sees its destinations (the
/// optimizer must not see through it and delete the call).
@inline(never) func opaqueDestination() -> DestinationPlugin { NoOpDestination(key: "Swift") }
