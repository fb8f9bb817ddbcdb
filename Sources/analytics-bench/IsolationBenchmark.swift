import AnalyticsCore
import Foundation

/// Events per second from `track()` until one no-op C destination (Tests/Fixtures/noop.c, key
/// Dest0 in `library`) acknowledged every event, in process mode (its runner fed in batches) or
/// in-process. Includes the whole pipeline (context, encoding, fan-out).
func isolationBenchmark(library: String, events n: Int, mode: IsolationMode) -> Double {
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var config = Configuration(writeKey: "bench", storageDirectory: dir)
    config.defaultSettings = Settings(["integrations": ["Dest0": [:]]])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.destinationQueueCapacity = 100_000
    config.destinationOverflow = .wait(seconds: .infinity)
    config.flushTimeout = 600
    config.pluginsDirectory = library
    config.isolation = IsolationConfiguration(allLibraries: mode)
    config.isolation.scanCacheFile = dir + "/scan.json"
    let analytics = Analytics(configuration: config)
    benchCheck(analytics.isolatedLibraries.count == (mode == .process ? 1 : 0), "the runner was not found next to analytics-bench")
    let properties: JSONObject = ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]
    for _ in 0..<1000 { analytics.track("Warm Up", properties: properties) }
    analytics.flush()
    let start = monotonicSeconds()
    for _ in 0..<n { analytics.track("Product Viewed", properties: properties) }
    analytics.flush()
    let elapsed = monotonicSeconds() - start
    let stats = analytics.timeline.stats(forKey: "Dest0")!
    benchCheck(stats.delivered == n + 1000 && stats.failed == 0, "Dest0 got \(stats.delivered) of \(n + 1000)")
    analytics.shutdown()
    return Double(n) / elapsed
}

/// The destination alone: events already encoded (as after fan-out) handed to the destination's
/// `execute` on one thread, then a flush that returns when the library acknowledged all of them —
/// the capacity of the isolation mechanism itself, without the cost of `track()` in front of it.
func isolatedDestinationBenchmark(library: String, events n: Int, mode: IsolationMode) -> Double {
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var config = Configuration(writeKey: "bench", storageDirectory: dir)
    config.defaultSettings = Settings(["integrations": ["Dest0": [:]]])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.pluginsDirectory = library
    config.isolation = IsolationConfiguration(allLibraries: mode)
    config.isolation.scanCacheFile = dir + "/scan.json"
    let analytics = Analytics(configuration: config)
    let destination = analytics.find(key: "Dest0")!
    benchCheck((destination is ProcessDestination) == (mode == .process))
    var event = try! Event(payload: ["type": "track", "event": "Product Viewed", "anonymousId": "a", "messageId": "m-1",
                                     "properties": ["product_id": "p-123", "price": 19.99, "currency": "USD", "quantity": 2]])
    event.shareEncoding()
    _ = event.serializedBytes
    analytics.flush()  // started, settings applied: the worker is idle from here on
    let start = monotonicSeconds()
    for _ in 0..<n { _ = destination.execute(event) }
    analytics.flush()
    let elapsed = monotonicSeconds() - start
    analytics.shutdown()
    return Double(n) / elapsed
}

/// Milliseconds from a crash of a process-mode library (Tests/Fixtures/isolated.c segfaulting on
/// "Crash") until its restarted runner acknowledged the next event: reap, spawn, load, create,
/// the event. Restart backoff set to 0 so only the work is measured; best of 5.
func restartBenchmark() -> Double {
    let dir = NSTemporaryDirectory() + "analytics-bench-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let gcc = Process()
    gcc.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
    gcc.arguments = ["-std=c99", "-shared", "-fPIC", "-O2", "-I", "include", "-o", "\(dir)/plugins/libisolated.so", "Tests/Fixtures/isolated.c"]
    try! gcc.run()
    gcc.waitUntilExit()
    benchCheck(gcc.terminationStatus == 0, "gcc failed building Tests/Fixtures/isolated.c (run from the package root)")
    var config = Configuration(writeKey: "bench", storageDirectory: dir + "/state")
    config.defaultSettings = Settings(["integrations": ["Isolated": ["isolation": "process"]]])
    config.trackApplicationLifecycleEvents = false
    config.settingsLocation = .defaultsOnly
    config.pluginsDirectory = dir + "/plugins"
    config.isolation.scanCacheFile = dir + "/scan.json"
    config.isolation.restartDelay = 0
    config.isolation.maxAttempts = 1
    config.isolation.maxCrashes = 100
    config.errorHandler = { _ in }
    let analytics = Analytics(configuration: config)
    analytics.track("Warm Up")
    analytics.flush()
    var best = Double.infinity
    for _ in 0..<5 {
        let start = monotonicSeconds()
        analytics.track("Crash")
        analytics.track("After")
        analytics.flush()
        best = min(best, (monotonicSeconds() - start) * 1000)
    }
    let stats = analytics.timeline.stats(forKey: "Isolated")!
    benchCheck(stats.restarts == 5 && stats.failed == 5, "restarts \(stats.restarts), failed \(stats.failed)")
    analytics.shutdown()
    return best
}

@MainActor func addIsolationRows() {
    let library = buildNoOpLibraries(count: 1)
    defer { try? FileManager.default.removeItem(atPath: library) }
    let process = isolationBenchmark(library: library, events: 500_000, mode: .process)
    let inProcess = isolationBenchmark(library: library, events: 500_000, mode: .inProcess)
    table.add("1 no-op C destination, process mode vs in-process, 500,000 events: events/s",
              "\(formatRate(process)) vs \(formatRate(inProcess)) (ratio \(String(format: "%.2f", process / inProcess)))",
              target: "≥ 200,000 (process)")
    let alone = isolatedDestinationBenchmark(library: library, events: 1_000_000, mode: .process)
    let aloneInProcess = isolatedDestinationBenchmark(library: library, events: 1_000_000, mode: .inProcess)
    table.add("the destination alone (encoded events → execute → acknowledged), process vs in-process: events/s",
              "\(formatRate(alone)) vs \(formatRate(aloneInProcess)) (ratio \(String(format: "%.2f", alone / aloneInProcess)))",
              target: "≥ 200,000 (process)")
    table.add("restart after a crash (reap, spawn, load, create, next event acknowledged): ms",
              String(format: "%.1f", restartBenchmark()))
}
