import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// The Swift vendor libraries (PostHog, GA4) through the kit's upload queue: a vendor that answers
/// 429 with `Retry-After: 1` makes the host's next retry wait that second (AH_EXT_RETRY_AFTER),
/// in this process and in a runner, instead of the host's own short backoff (0.1 s here).
@Suite struct VendorRetryAfterTests {
    static func client(_ vendor: String, _ server: LoopbackHTTPServer, mode: IsolationMode) throws -> FixtureLibraryClient {
        let product = vendor == "PostHog" ? "PostHogIntegration" : "GoogleAnalytics4Integration"
        _ = try SwiftPluginFiles.load(product)  // fails with the reason when not built or stale
        let settings: JSONObject = vendor == "PostHog"
            ? ["apiKey": "phc_test_project_key", "apiHost": .string(server.baseURL)]
            // GA4 holds a client's events up to maxWaitSeconds for more of the same client (the
            // retried event too): short here, so the gap measured is the Retry-After's.
            : ["measurementId": "G-TEST", "apiSecret": "secret", "apiHost": .string(server.baseURL), "maxWaitSeconds": 0.2]
        return try FixtureLibraryClient(file: SwiftPluginFiles.path(product), key: vendor == "PostHog" ? "PostHog" : "Google Analytics 4",
                                        settings: settings, mode: mode)
    }

    @Test(arguments: ["PostHog", "GA4"], [IsolationMode.inProcess, .process])
    func aRetryAfterFromTheVendorDelaysTheHostsRetry(vendor: String, mode: IsolationMode) throws {
        // When each request arrived (monotonic seconds); the first is answered 429 Retry-After: 1.
        let arrivals = Locked<[Double]>([])
        let server = try LoopbackHTTPServer(options: .init(respond: { _ in
            let first = arrivals.withLock { times in
                times.append(monotonicSeconds())
                return times.count == 1
            }
            return first ? .status(429, headers: [("Retry-After", "1")], body: "slow down") : .json(#"{"status":1}"#)
        }))
        defer { server.stop() }
        let c = try Self.client(vendor, server, mode: mode)
        _ = try? c.analytics.process(payload: ["type": "track", "event": "Throttled", "userId": "u-1", "anonymousId": "anon-1",
                                               "messageId": "m-1", "timestamp": .string(ISO8601DateFormatter().string(from: Date()))])
        #expect(c.analytics.flush())
        let times = arrivals.withLock { $0 }
        try #require(times.count == 2, "one 429, then one retry: \(times.count) requests")
        let gap = times[1] - times[0]
        #expect(gap >= 0.95, "the retry came \(gap) s after the 429 with Retry-After: 1")
        #expect(gap < 5, "and not much later: \(gap) s")
        let stats = try #require(c.stats)
        #expect(stats.delivered == 1 && stats.failed == 0, "\(stats)")
        #expect(c.analytics.shutdown())
    }
}
