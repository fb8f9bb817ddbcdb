import AnalyticsIntegration
import Foundation

/// The settings of a "PostHog" destination, read under the names Segment's PostHog destination
/// uses, plus `apiHost` (a base URL that replaces the instance's host, for proxies and tests).
///
///   {"apiKey": "phc_…",                         // project API key, required
///    "postHogInstance": "https://eu.i.posthog.com", // Segment's name for the base URL
///    "apiHost": "http://127.0.0.1:8080",       // wins over postHogInstance when both are set
///    "groupType": "company",                   // group type of a group call (default "company")
///    "geoipDisable": false,                    // Segment's geoip_disable: never locate events
///                                              // (events without context.ip never are)
///    "gzip": true,                             // compress request bodies (default true)
///    "timeoutSeconds": 10, "maxAttempts": 3}   // per request; tries per batch inside one call
struct PostHogConfiguration: Equatable {
    var apiKey: String
    /// `{base}/batch/`.
    var batchURL: URL
    var groupType: String { mapping.groupType }
    var mapping: PostHogMapping.Options
    var gzip: Bool
    var timeoutSeconds: Double
    var maxAttempts: Int

    /// PostHog Cloud US, as the official SDKs default to.
    static let defaultBase = "https://us.i.posthog.com"

    init(settings: JSONObject) throws(IntegrationError) {
        guard let key = settings["apiKey"]?.stringValue?.trimmingCharacters(in: .whitespaces), !key.isEmpty else {
            throw .permanent("PostHog: settings need a non-empty \"apiKey\" string (the project API key)")
        }
        apiKey = key
        var base = PostHogConfiguration.defaultBase
        for name in ["postHogInstance", "apiHost"] {
            guard let value = settings[name] else { continue }
            guard let text = value.stringValue, !text.isEmpty else {
                throw .permanent("PostHog: \"\(name)\" must be a non-empty URL string")
            }
            base = text
        }
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + "/batch/"), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", url.host != nil else {
            throw .permanent("PostHog: \"\(base)\" is not an http(s) base URL")
        }
        batchURL = url
        mapping = PostHogMapping.Options()
        mapping.groupType = settings["groupType"]?.stringValue ?? "company"
        guard !mapping.groupType.isEmpty else { throw .permanent("PostHog: \"groupType\" must not be empty") }
        for name in ["geoipDisable", "geoip_disable"] {
            guard let value = settings[name] else { continue }
            guard let flag = value.boolValue else { throw .permanent("PostHog: \"\(name)\" must be true or false") }
            mapping.geoipDisable = flag
        }
        gzip = settings["gzip"]?.boolValue ?? true
        timeoutSeconds = settings["timeoutSeconds"]?.doubleValue ?? 10
        guard timeoutSeconds > 0, timeoutSeconds <= 300 else {
            throw .permanent("PostHog: \"timeoutSeconds\" must be a number in (0, 300]")
        }
        maxAttempts = settings["maxAttempts"]?.intValue ?? 3
        guard (1...10).contains(maxAttempts) else { throw .permanent("PostHog: \"maxAttempts\" must be an integer in 1...10") }
    }
}
