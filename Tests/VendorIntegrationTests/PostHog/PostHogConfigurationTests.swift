import AnalyticsCore
import AnalyticsIntegration
import Testing
@testable import PostHogIntegration

/// Settings under Segment's names, plus apiHost.
@Suite struct PostHogConfigurationTests {
    @Test func segmentsNamesAndApiHost() throws {
        #expect(try PostHogConfiguration(settings: ["apiKey": "phc_1"]).batchURL.absoluteString == "https://us.i.posthog.com/batch/")
        #expect(try PostHogConfiguration(settings: ["apiKey": "phc_1", "postHogInstance": "https://eu.i.posthog.com/"]).batchURL.absoluteString
                == "https://eu.i.posthog.com/batch/")
        let both = try PostHogConfiguration(settings: ["apiKey": "phc_1", "postHogInstance": "https://eu.i.posthog.com", "apiHost": "http://127.0.0.1:9/proxy"])
        #expect(both.batchURL.absoluteString == "http://127.0.0.1:9/proxy/batch/", "apiHost replaces the vendor host")
        let options = try PostHogConfiguration(settings: ["apiKey": "phc_1", "groupType": "team", "gzip": false, "maxAttempts": 5])
        #expect(options.groupType == "team" && !options.gzip && options.maxAttempts == 5)
    }

    @Test(arguments: [
        (JSONObject(), "PostHog: settings need a non-empty \"apiKey\" string (the project API key)"),
        (["apiKey": " "], "PostHog: settings need a non-empty \"apiKey\" string (the project API key)"),
        (["apiKey": "k", "apiHost": "ftp://x"], "PostHog: \"ftp://x\" is not an http(s) base URL"),
        (["apiKey": "k", "postHogInstance": 3], "PostHog: \"postHogInstance\" must be a non-empty URL string"),
        (["apiKey": "k", "maxAttempts": 0], "PostHog: \"maxAttempts\" must be an integer in 1...10"),
    ] as [(JSONObject, String)])
    func badSettingsAreRefusedWithTheReason(settings: JSONObject, message: String) {
        #expect(throws: IntegrationError.permanent(message)) { try PostHogConfiguration(settings: settings) }
    }
}
