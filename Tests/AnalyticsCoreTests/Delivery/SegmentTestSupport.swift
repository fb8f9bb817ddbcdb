import AnalyticsTestSupport
import Foundation
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// A real client whose Segment.io destination uploads to a loopback server.
struct SegmentHarness {
    static let writeKey = "seg-key"

    let analytics: Analytics
    let errors: ErrorLog
    let directory: String

    /// - Parameters:
    ///   - apiHost: where uploads go (`<server>/v1`); nil keeps the settings' host.
    ///   - httpConfig: `integrations["Segment.io"].httpConfig` (fast backoff by default, so retries
    ///     take a tenth of a second instead of half of one).
    init(apiHost: String?, directory: String = makeTempDirectory("segment"), flushAt: Int = 20,
         httpConfig: JSON? = SegmentHarness.fastBackoff, extraKeys: [String] = [],
         configure: (inout Configuration) -> Void = { _ in }) {
        var mine: JSONObject = ["apiKey": .string(Self.writeKey)]
        if let httpConfig { mine["httpConfig"] = httpConfig }
        var integrations: JSONObject = ["Segment.io": .object(mine)]
        for k in extraKeys { integrations[k] = [:] }
        let errors = ErrorLog()
        var config = Configuration(writeKey: "not-" + Self.writeKey, storageDirectory: directory)
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": .object(integrations)])
        config.settingsLocation = .defaultsOnly
        config.errorHandler = errors.handler
        config.flushAt = flushAt
        config.flushInterval = 3600
        config.segment.apiHost = apiHost
        config.segment.requestTimeout = 1
        config.segment.flushWait = 5
        configure(&config)
        self.analytics = Analytics(configuration: config)
        self.errors = errors
        self.directory = directory
    }

    static let fastBackoff: JSON = ["backoffConfig": ["baseBackoffInterval": 0.1, "jitterPercent": 0]]

    var segment: SegmentDestination { analytics.find(key: "Segment.io") as! SegmentDestination }
    var stats: DestinationStats { analytics.timeline.stats(forKey: "Segment.io")! }
}

extension SegmentHarness {
    /// A client started on the storage a SIGKILLed child left, uploading to `server`: every event
    /// the children had accepted must arrive from here.
    static func restarted(storage: String, uploadingTo server: LoopbackHTTPServer) throws -> (Analytics, ErrorLog) {
        let errors = ErrorLog()
        var config = Configuration(writeKey: "crash-key", storageDirectory: storage)
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "crash-key"]]])
        config.settingsLocation = .defaultsOnly
        config.segment.apiHost = "\(server.baseURL)/v1"
        config.errorHandler = errors.handler
        return (try Analytics.start(configuration: config), errors)
    }
}
