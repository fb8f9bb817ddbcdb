import Testing
@testable import AnalyticsCore

@Suite struct UploadRetryPolicyTests {
    @Test func defaultsFollowTheSegmentPolicy() {
        let p = RetryPolicy.standard
        for code in [200, 201, 204] { #expect(p.classify(status: code) == .success) }
        for code in [400, 401, 403, 404, 413, 422, 418, 501, 505] { #expect(p.classify(status: code) == .drop, "\(code)") }
        for code in [408, 410, 460, 500, 502, 503, 504, 508, 599] { #expect(p.classify(status: code) == .retry, "\(code)") }
        #expect(p.classify(status: 429) == .rateLimited)
        #expect(p.classify(status: 302) == .drop)
    }

    @Test func backoffDoublesFromHalfASecondAndIsCapped() {
        let p = RetryPolicy.standard
        #expect(p.backoff(failures: 1, random: 0) == 0.5)
        #expect(p.backoff(failures: 2, random: 0) == 1.0)
        #expect(p.backoff(failures: 4, random: 0) == 4.0)
        #expect(abs(p.backoff(failures: 1, random: 0.999_999) - 0.55) < 1e-6)  // 10 % jitter at most
        #expect(p.backoff(failures: 30, random: 0.9) == 300)
        #expect(p.backoff(failures: 10_000, random: 0.5) == 300)
    }

    @Test func readsHttpConfigFromSettings() throws {
        let settings = try JSON(parsing: #"""
        {"integrations":{"Segment.io":{"apiKey":"k","httpConfig":{
          "rateLimitConfig":{"enabled":true,"maxRetryCount":7,"maxRetryInterval":60,"maxRateLimitDuration":600,"future":1},
          "backoffConfig":{"enabled":true,"maxRetryCount":5,"baseBackoffInterval":1,"maxBackoffInterval":20,
            "maxTotalBackoffDuration":3600,"jitterPercent":0,"default4xxBehavior":"RETRY","default5xxBehavior":"drop",
            "statusCodeOverrides":{"400":"drop","503":"retry"}}}}}}
        """#).objectValue!
        let (p, warnings) = RetryPolicy.parse(settings: settings)
        #expect(warnings.isEmpty)
        #expect(p.rateLimitMaxRetryCount == 7)
        #expect(p.maxRetryInterval == 60)
        #expect(p.maxRateLimitDuration == 600)
        #expect(p.maxRetryCount == 5)
        #expect(p.baseBackoffInterval == 1)
        #expect(p.maxBackoffInterval == 20)
        #expect(p.maxTotalBackoffDuration == 3600)
        #expect(p.jitterPercent == 0)
        // Overrides replace the default map: 408 now follows default4xxBehavior, 501 default5xx.
        #expect(p.statusCodeOverrides == [400: .drop, 503: .retry])
        #expect(p.classify(status: 400) == .drop)
        #expect(p.classify(status: 404) == .retry)
        #expect(p.classify(status: 500) == .drop)
        #expect(p.classify(status: 503) == .retry)
        #expect(p.backoff(failures: 10, random: 0) == 20)
    }

    @Test func badValuesWarnAndKeepDefaults() throws {
        let config = try JSON(parsing: #"""
        {"rateLimitConfig":"nope","backoffConfig":{"maxRetryCount":"many","jitterPercent":500,"baseBackoffInterval":0.001,
         "default4xxBehavior":"maybe","statusCodeOverrides":{"abc":"retry","700":"drop","404":"perhaps","418":"retry"}}}
        """#)
        let (p, warnings) = RetryPolicy.parse(httpConfig: config)
        #expect(p.rateLimitEnabled)
        #expect(p.maxRetryCount == 100)
        #expect(p.jitterPercent == 100)
        #expect(p.baseBackoffInterval == 0.1)
        #expect(p.default4xxBehavior == .drop)
        #expect(p.statusCodeOverrides == [418: .retry])
        let text = warnings.joined(separator: "\n")
        #expect(text.contains("httpConfig.rateLimitConfig: expected an object"))
        #expect(text.contains("httpConfig.backoffConfig.maxRetryCount: expected a number"))
        #expect(text.contains("httpConfig.backoffConfig.jitterPercent: 500.0 clamped to 100.0"))
        #expect(text.contains("httpConfig.backoffConfig.default4xxBehavior"))
        #expect(text.contains("httpConfig.backoffConfig.statusCodeOverrides.abc"))
        #expect(text.contains("httpConfig.backoffConfig.statusCodeOverrides.404"))
        #expect(RetryPolicy.parse(httpConfig: nil).policy == .standard)
        #expect(RetryPolicy.parse(httpConfig: [1, 2]).warnings.count == 1)
    }

    @Test func rateLimitDisabledTreats429ByOverrides() {
        var p = RetryPolicy.standard
        p.rateLimitEnabled = false
        #expect(p.classify(status: 429) == .retry)
        p.statusCodeOverrides[429] = .drop
        #expect(p.classify(status: 429) == .drop)
    }
}
