import AnalyticsCore
import AnalyticsTestSupport
import Foundation

/// The vendor rows: events through each vendor library (docs/vendors/) to its strict loopback
/// fake, from the first track() until the fake has taken the last event. The C libraries
/// (Amplitude, Mixpanel) are built here with `make plugins`' flags; the Swift ones (PostHog,
/// GA4) are taken from build/bench-plugins (release builds, `make bench-plugins`), else from
/// build/plugins (`make plugins`' debug builds, several times slower), skipped when absent. CPU time is the whole
/// process's: the client, the library and the fake, which parses every request.
struct VendorBenchmarkResult {
    var eventsPerSecond: Double
    var cpuMicrosecondsPerEvent: Double
    var requests: Int
    var problem: String?
}

/// A vendor for the benchmark: its key, its library file, settings naming its fake, and how many
/// events the fake has taken so far.
struct BenchVendor {
    var key: String
    var library: String
    var settings: JSON
    var taken: () -> Int
    var requests: () -> Int
    var keepAlive: AnyObject
}

/// Builds a C vendor library from Plugins/<folder> and the Plugins/VendorSupport it compiles in,
/// into `dir` (nil on failure).
func buildVendorLibrary(_ folder: String, into dir: String, output: String) -> String? {
    let sources = FixtureBuilder.vendorSources(folder)
    let gcc = Process()
    gcc.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
    gcc.arguments = ["-std=c99", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-I", "include", "-o", "\(dir)/\(output)"] + sources + ["-lm", "-pthread"]
    guard (try? gcc.run()) != nil else { return nil }
    gcc.waitUntilExit()
    return gcc.terminationStatus == 0 ? "\(dir)/\(output)" : nil
}

/// `count` track calls through `vendor`'s library to its fake; each vendor in a plugins
/// directory of its own, so only that library is loaded.
func vendorBenchmark(_ vendor: BenchVendor, events count: Int) -> VendorBenchmarkResult {
    let dir = NSTemporaryDirectory() + "analytics-bench-vendor-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let plugins = dir + "/plugins"
    try? FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
    guard (try? FileManager.default.copyItem(atPath: vendor.library, toPath: plugins + "/" + (vendor.library as NSString).lastPathComponent)) != nil else {
        return VendorBenchmarkResult(eventsPerSecond: 0, cpuMicrosecondsPerEvent: 0, requests: 0, problem: "cannot copy \(vendor.library)")
    }
    var config = Configuration(writeKey: "bench", storageDirectory: dir + "/storage")
    config.defaultSettings = Settings(["integrations": [vendor.key: vendor.settings]])
    config.settingsLocation = .defaultsOnly
    config.trackApplicationLifecycleEvents = false
    config.application = ApplicationInfo(name: "bench", version: "1.0", build: "1")
    config.pluginsDirectory = plugins
    config.maxQueueBytes = 1 << 30
    config.flushTimeout = 600
    config.destinationOverflow = .wait(seconds: 60)
    let errors = Locked<[String]>([])
    config.errorHandler = { e in errors.withLock { if $0.count < 3 { $0.append(e.description) } } }
    let analytics = Analytics(configuration: config)
    defer { analytics.shutdown() }
    let properties: JSONObject = ["product_id": "p-123", "name": "Café ☕", "price": 19.99, "currency": "EUR", "quantity": 2]
    let cpuStart = processCPUSeconds()
    let start = monotonicSeconds()
    for i in 0..<count {
        var numbered = properties
        numbered["n"] = .number(JSONNumber(i))
        analytics.track("Product Viewed", properties: numbered)
    }
    analytics.flush()
    let deadline = start + 300
    let idle = NSCondition()
    while vendor.taken() < count, monotonicSeconds() < deadline {
        idle.lock()
        _ = idle.wait(until: Date(timeIntervalSinceNow: 0.005))
        idle.unlock()
    }
    let elapsed = monotonicSeconds() - start
    let cpu = processCPUSeconds() - cpuStart
    let taken = vendor.taken()
    let problem = taken < count ? "\(taken) of \(count) taken" + (errors.withLock { $0.first }.map { ": \($0)" } ?? "") : nil
    return VendorBenchmarkResult(eventsPerSecond: Double(taken) / elapsed, cpuMicrosecondsPerEvent: cpu * 1e6 / Double(max(1, taken)),
                                 requests: vendor.requests(), problem: problem)
}

/// The vendors whose libraries are there, each with a fresh fake.
func benchVendors(libraries dir: String) -> (vendors: [BenchVendor], skipped: [String]) {
    var vendors: [BenchVendor] = [], skipped: [String] = []
    if let file = buildVendorLibrary("Amplitude", into: dir, output: "libamplitude.so"), let fake = try? AmplitudeFake() {
        vendors.append(BenchVendor(key: "Amplitude", library: file, settings: ["apiKey": .string(fake.apiKey), "apiHost": .string(fake.baseURL)],
                                   taken: { fake.events.count }, requests: { fake.server.requestCount }, keepAlive: fake))
    } else { skipped.append("Amplitude (gcc failed)") }
    if let file = buildVendorLibrary("Mixpanel", into: dir, output: "libmixpanel.so"), let fake = try? MixpanelFake(recordBodies: false) {
        vendors.append(BenchVendor(key: "Mixpanel", library: file,
                                   settings: ["projectToken": .string(fake.token), "apiSecret": .string(fake.apiSecret), "apiHost": .string(fake.baseURL)],
                                   taken: { fake.events.count }, requests: { fake.server.requestCount }, keepAlive: fake))
    } else { skipped.append("Mixpanel (gcc failed)") }
    // Optimized builds (`make bench` makes them) when there, else `make plugins`' debug builds.
    let built = FileManager.default.fileExists(atPath: "build/bench-plugins/libPostHogIntegration.so") ? "build/bench-plugins/" : "build/plugins/"
    if FileManager.default.fileExists(atPath: built + "libPostHogIntegration.so"), let fake = try? PostHogFake() {
        vendors.append(BenchVendor(key: "PostHog", library: built + "libPostHogIntegration.so",
                                   settings: ["apiKey": .string(fake.projectKey), "apiHost": .string(fake.baseURL)],
                                   taken: { fake.events.count }, requests: { fake.server.requestCount }, keepAlive: fake))
    } else { skipped.append("PostHog (run make plugins)") }
    if FileManager.default.fileExists(atPath: built + "libGoogleAnalytics4Integration.so"), let fake = try? GA4Fake() {
        vendors.append(BenchVendor(key: "Google Analytics 4", library: built + "libGoogleAnalytics4Integration.so",
                                   settings: ["measurementId": .string(fake.streamId), "apiSecret": .string(fake.apiSecret), "apiHost": .string(fake.baseURL)],
                                   taken: { fake.events.count }, requests: { fake.server.requestCount }, keepAlive: fake))
    } else { skipped.append("Google Analytics 4 (run make plugins)") }
    return (vendors, skipped)
}

/// One row per vendor: events/s and CPU µs/event (and the requests it took).
@MainActor func addVendorRows(events count: Int = 20_000) {
    let dir = NSTemporaryDirectory() + "analytics-bench-vendor-libraries-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (vendors, skipped) = benchVendors(libraries: dir)
    for vendor in vendors {
        let r = vendorBenchmark(vendor, events: count)
        table.add("\(vendor.key) library → its loopback fake, \(formatRate(Double(count))) tracks: events/s (CPU µs/event, requests)",
                  r.problem.map { "failed: \($0)" }
                    ?? String(format: "%@ (%.1f, %d)", formatRate(r.eventsPerSecond), r.cpuMicrosecondsPerEvent, r.requests))
        withExtendedLifetime(vendor.keepAlive) {}
    }
    for s in skipped { table.add("vendor library → its loopback fake: \(s)", "skipped") }
}
