import Foundation

/// Sends batches to the Segment tracking API (`POST <apiHost>/b`), gzip-compressed, with HTTP
/// Basic auth (write key as user, empty password) and `X-Retry-Count`, and applies the
/// ``RetryPolicy`` to the answers.
///
/// Thread safety: every method may be called from any thread; concurrent `deliver` calls each
/// get their own compressor. The retry policy can be swapped at any time (settings refresh).
package final class Uploader: Sendable {
    private let client: HTTPClient
    private let sleeper: any RetrySleeper
    private let random: @Sendable () -> Double
    private let clock: @Sendable () -> Double
    private let state: Locked<State>
    private let compressors = Locked<[GzipCompressor]>([])

    private struct State {
        var configuration: UploadConfiguration
        var url: Result<URL, UploadEndpointError>
        var authorization: String
    }

    /// - Parameters:
    ///   - sleeper: waits between retries (``InterruptibleSleeper`` by default; cancel it at shutdown).
    ///   - random: uniform in [0, 1), for jitter.
    ///   - clock: monotonic seconds, for the total-retry-time limits.
    package init(configuration: UploadConfiguration, client: HTTPClient = HTTPClient(plainHTTPOverSockets: true),
                sleeper: any RetrySleeper = InterruptibleSleeper(),
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                clock: @escaping @Sendable () -> Double = monotonicSeconds) {
        self.client = client
        self.sleeper = sleeper
        self.random = random
        self.clock = clock
        self.state = Locked(Uploader.makeState(configuration))
    }

    private static func makeState(_ c: UploadConfiguration) -> State {
        let url = Result { () throws(UploadEndpointError) in try c.batchURL() }
        let credentials = Data("\(c.writeKey):".utf8).base64EncodedString()
        return State(configuration: c, url: url, authorization: "Basic " + credentials)
    }

    package var configuration: UploadConfiguration { state.withLock { $0.configuration } }

    /// Replaces the configuration (e.g. a settings refresh changed `apiHost` or `httpConfig`).
    package func update(configuration: UploadConfiguration) {
        let s = Uploader.makeState(configuration)
        state.withLock { $0 = s }
    }

    /// Replaces only the retry policy.
    package func update(retryPolicy: RetryPolicy) {
        state.withLock { $0.configuration.retryPolicy = retryPolicy }
    }

    // MARK: One attempt

    /// One POST of `batch` with `X-Retry-Count: retryCount`; no retries.
    package func attempt(_ batch: UploadBatch, retryCount: Int = 0) -> UploadAttemptResult {
        let (config, urlResult, authorization) = state.withLock { ($0.configuration, $0.url, $0.authorization) }
        let url: URL
        switch urlResult {
        case .success(let u): url = u
        case .failure(let e): return .failed(.invalidEndpoint(e.description))
        }
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"),
            ("Authorization", authorization),
            ("User-Agent", config.userAgent),
            ("X-Retry-Count", String(retryCount)),
        ]
        let body: [UInt8]
        if config.compressionLevel > 0 {
            do {
                body = try withCompressor(level: config.compressionLevel) { z throws(GzipError) in try batch.compressedBody(with: z) }
            } catch {
                return .failed(.compression(error.description))
            }
            headers.append(("Content-Encoding", "gzip"))
        } else {
            body = batch.body()
        }
        let request = HTTPRequest(method: "POST", url: url, headers: headers, body: body, timeout: config.requestTimeout)
        switch client.send(request) {
        case .success(let response):
            if (200..<300).contains(response.status) { return .accepted(status: response.status) }
            let retryAfter = response.header("Retry-After").flatMap(Uploader.parseRetryAfter)
            let snippet = String(decoding: response.body.prefix(300), as: UTF8.self)
            return .failed(.status(code: response.status, retryAfter: retryAfter, body: snippet))
        case .failure(.timedOut(_, let after)):
            return .failed(.timedOut(after: after))
        case .failure(.network(_, let reason)):
            return .failed(.network(reason))
        }
    }

    /// `Retry-After` as delay-seconds (the form Segment sends); HTTP dates are not supported and
    /// count as absent, so the backoff applies instead.
    static func parseRetryAfter(_ text: String) -> Double? {
        guard let v = Double(text.trimmingCharacters(in: .whitespaces)), v.isFinite, v >= 0 else { return nil }
        return v
    }

    private func withCompressor<R>(level: Int32, _ body: (GzipCompressor) throws(GzipError) -> R) throws(GzipError) -> R {
        var z = compressors.withLock { $0.popLast() } ?? GzipCompressor(level: level)
        if z.level != level { z = GzipCompressor(level: level) }
        defer { compressors.withLock { if $0.count < 4 { $0.append(z) } } }
        return try body(z)
    }

    // MARK: Delivery with retries

    /// Uploads `batch`, retrying per the policy until it is accepted, must be dropped, or the
    /// sleeper is cancelled. Blocks the calling thread during waits.
    ///
    /// - 2xx: delivered. - 429 (rate limiting enabled): wait `Retry-After` (capped at
    ///   `maxRetryInterval`; the backoff when absent). - retryable status, network error, timeout:
    ///   exponential backoff with jitter. - other statuses: dropped at once (400 included).
    /// Limits: `maxRetryCount` retryable failures / `rateLimitMaxRetryCount` 429s, and the total
    /// time since the first failure (`maxTotalBackoffDuration`, `maxRateLimitDuration`).
    /// - Parameters:
    ///   - retryCount: the `X-Retry-Count` of the first attempt (a batch restored from disk carries
    ///     on where it stopped).
    ///   - beforeAttempt: called with each attempt's `X-Retry-Count` just before it is sent (the
    ///     Segment.io destination persists the count, so that it goes on across runs).
    ///   - afterFailure: called with each failed attempt's failure, before any wait (the
    ///     Segment.io destination reports it at once rather than when the retries end).
    package func deliver(_ batch: UploadBatch, retryCount: Int = 0,
                        beforeAttempt: (Int) -> Void = { _ in },
                        afterFailure: (UploadFailure) -> Void = { _ in }) -> UploadOutcome {
        var retry = retryCount
        var attempts = 0
        var waits: [Double] = []
        var failures = 0
        var rateLimits = 0
        var firstFailure: Double?
        var firstRateLimit: Double?
        var lastFailure: UploadFailure?

        func outcome(_ d: UploadOutcome.Disposition, _ failure: UploadFailure?, _ reason: String) -> UploadOutcome {
            UploadOutcome(disposition: d, attempts: attempts, failure: failure, reason: reason, waits: waits,
                          nextRetryCount: d == .deferred ? retry : 0)
        }

        while true {
            let policy = state.withLock { $0.configuration.retryPolicy }
            attempts += 1
            beforeAttempt(retry)
            let failure: UploadFailure
            switch attempt(batch, retryCount: retry) {
            case .accepted: return outcome(.delivered, lastFailure, "accepted")
            case .failed(let f): failure = f
            }
            lastFailure = failure
            afterFailure(failure)

            let now = clock()
            let wait: Double
            switch failure {
            case .compression, .invalidEndpoint:
                return outcome(.dropped, failure, failure.description)
            case .status(let code, let retryAfter, _):
                switch policy.classify(status: code) {
                case .success:
                    return outcome(.delivered, lastFailure, "accepted")
                case .drop:
                    return outcome(.dropped, failure, "HTTP \(code) is not retryable")
                case .rateLimited:
                    rateLimits += 1
                    if firstRateLimit == nil { firstRateLimit = now }
                    if rateLimits > policy.rateLimitMaxRetryCount {
                        return outcome(.dropped, failure, "rate limited \(rateLimits) times (limit \(policy.rateLimitMaxRetryCount))")
                    }
                    let w = min(retryAfter ?? policy.backoff(failures: rateLimits, random: random()), policy.maxRetryInterval)
                    if now - firstRateLimit! + w > policy.maxRateLimitDuration {
                        return outcome(.dropped, failure, "rate limited for longer than \(policy.maxRateLimitDuration) s")
                    }
                    wait = w
                case .retry:
                    guard let w = backoffWait(policy, &failures, &firstFailure, now) else {
                        return limitOutcome(policy, failures, failure, outcome)
                    }
                    wait = w
                }
            case .network, .timedOut:
                guard let w = backoffWait(policy, &failures, &firstFailure, now) else {
                    return limitOutcome(policy, failures, failure, outcome)
                }
                wait = w
            }
            if wait < 0 {
                // Backoff disabled (legacy mode): keep the batch for the next flush.
                retry += 1
                return outcome(.deferred, failure, "backoff disabled by httpConfig; retry at the next flush")
            }
            retry += 1
            waits.append(wait)
            if !sleeper.sleep(seconds: wait) {
                return outcome(.deferred, failure, "retry wait cancelled")
            }
        }
    }

    /// The next backoff wait, -1 when backoff is disabled, nil when a limit is reached.
    private func backoffWait(_ policy: RetryPolicy, _ failures: inout Int, _ firstFailure: inout Double?, _ now: Double) -> Double? {
        guard policy.backoffEnabled else { return -1 }
        failures += 1
        if firstFailure == nil { firstFailure = now }
        if failures > policy.maxRetryCount { return nil }
        let w = policy.backoff(failures: failures, random: random())
        if now - firstFailure! + w > policy.maxTotalBackoffDuration { return nil }
        return w
    }

    private func limitOutcome(_ policy: RetryPolicy, _ failures: Int, _ failure: UploadFailure,
                              _ make: (UploadOutcome.Disposition, UploadFailure?, String) -> UploadOutcome) -> UploadOutcome {
        if failures > policy.maxRetryCount {
            return make(.dropped, failure, "\(failures) failures (limit \(policy.maxRetryCount)); last: \(failure)")
        }
        return make(.dropped, failure, "retrying for longer than \(policy.maxTotalBackoffDuration) s; last: \(failure)")
    }
}
