import AnalyticsCore
import AnalyticsTestSupport
import Foundation

/// What every benchmark client starts from: the settings given (no CDN), no lifecycle events, a
/// fixed application, and a flush that may take its time.
func benchConfiguration(storage: String, integrations: JSONObject) -> Configuration {
    var config = Configuration(writeKey: "bench", storageDirectory: storage)
    config.defaultSettings = Settings(["integrations": .object(integrations)])
    config.settingsLocation = .defaultsOnly
    config.trackApplicationLifecycleEvents = false
    config.application = ApplicationInfo(name: "bench", version: "1.0", build: "1")
    config.flushTimeout = 600
    return config
}

/// Wall and process CPU seconds of `n` tracks of `event` and a flush, after 1000 of `warmUp` and a
/// flush (the pipeline's queues, threads and caches made).
func timedTracks(_ analytics: Analytics, events n: Int, warmUp: String, event: String, properties: JSONObject) -> (wall: Double, cpu: Double) {
    for _ in 0..<1000 { analytics.track(warmUp, properties: properties) }
    analytics.flush()
    let start = monotonicSeconds()
    let cpuStart = processCPUSeconds()
    for _ in 0..<n { analytics.track(event, properties: properties) }
    analytics.flush()
    return (monotonicSeconds() - start, processCPUSeconds() - cpuStart)
}

/// A client uploading to a loopback server through the built-in Segment.io destination, its queue
/// allowed to sit on disk (1 GiB) and `track()` waiting, not dropping, when the queue is full: a
/// run loses nothing and its figure is the sustained rate. Nil (said on standard error) when
/// something is missing; `errors` keeps the first five the client reported.
struct UploadingClient {
    let server: LoopbackHTTPServer
    let analytics: Analytics
    let segment: SegmentDestination
    let stats: DestinationStats
    let errors = Locked<[String]>([])

    init?(storage: String, configure: (inout Configuration) -> Void = { _ in }) {
        guard let server = try? LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false)) else {
            FileHandle.standardError.write(Data("analytics-bench: cannot start the loopback server\n".utf8))
            return nil
        }
        var config = benchConfiguration(storage: storage, integrations: ["Segment.io": ["apiKey": "bench"]])
        config.segment.apiHost = "\(server.baseURL)/v1"
        config.maxQueueBytes = 1 << 30
        config.destinationOverflow = .wait(seconds: 60)
        let errors = self.errors
        config.errorHandler = { e in errors.withLock { if $0.count < 5 { $0.append(e.description) } } }
        configure(&config)
        let analytics = Analytics(configuration: config)
        guard let segment = analytics.find(key: "Segment.io") as? SegmentDestination,
              let stats = analytics.timeline.stats(forKey: "Segment.io") else {
            FileHandle.standardError.write(Data("analytics-bench: no Segment.io destination\n".utf8))
            analytics.shutdown()
            server.stop()
            return nil
        }
        (self.server, self.analytics, self.segment, self.stats) = (server, analytics, segment, stats)
    }

    /// Waits until the server acknowledged (or the client gave up on) `n` events.
    func waitUntilSettled(_ n: Int, counting overflowed: Bool = false) {
        let idle = NSCondition()
        while segment.uploadedEvents + stats.failed + (overflowed ? stats.overflowed : 0) < n {
            idle.lock()
            _ = idle.wait(until: Date(timeIntervalSinceNow: 0.001))
            idle.unlock()
        }
    }

    func stop() {
        analytics.shutdown()
        server.stop()
    }
}
