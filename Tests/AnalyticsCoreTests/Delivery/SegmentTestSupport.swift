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

/// One upload as the server saw it.
struct ReceivedBatch {
    let messageIds: [String]
    /// `properties.index` of each event (what `segment-crash-child` tracks).
    let crashIndices: [Int]
    let sentAt: String?
    let writeKey: String?
    let request: RecordedRequest

    init(_ request: RecordedRequest) throws {
        self.request = request
        guard case .object(let body) = try JSON(parsing: request.body) else { throw SegmentTestFailure("body is not an object") }
        let events = body["batch"]?.arrayValue ?? []
        messageIds = events.compactMap { $0["messageId"]?.stringValue }
        crashIndices = events.compactMap { $0["properties"]?["index"]?.doubleValue.map(Int.init) }
        sentAt = body["sentAt"]?.stringValue
        writeKey = body["writeKey"]?.stringValue
    }
}

struct SegmentTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

extension LoopbackHTTPServer {
    /// Every upload so far, parsed.
    func batches() throws -> [ReceivedBatch] { try requests.map(ReceivedBatch.init) }

    /// Every messageId received so far, in arrival order (duplicates kept).
    func messageIds() throws -> [String] { try batches().flatMap(\.messageIds) }

    /// Polls until `ids` have all arrived; false at the deadline.
    func waitForMessageIds(_ ids: Set<String>, timeout: Double = 20) throws -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if ids.isSubset(of: Set(try messageIds())) { return true }
            _ = waitForRequests(requestCount + 1, timeout: 0.05)
        }
        return ids.isSubset(of: Set(try messageIds()))
    }
}

/// Polls `condition` until it holds or `timeout` passes (no fixed sleeps: each round waits on a
/// condition variable for at most 10 ms).
func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicSeconds() + timeout
    let idle = NSCondition()
    while monotonicSeconds() < deadline {
        if try condition() { return true }
        idle.lock()
        _ = idle.wait(until: Date(timeIntervalSinceNow: 0.01))
        idle.unlock()
    }
    return try condition()
}

/// A port on 127.0.0.1 where nothing listens (a server was there and stopped): connection refused.
func refusedPort() throws -> UInt16 {
    let server = try LoopbackHTTPServer()
    let port = server.port
    server.stop()
    return port
}
