/// What to do with a batch after a response.
package enum RetryBehavior: String, Sendable, Equatable {
    case retry
    case drop

    init?(lenient text: String) { self.init(rawValue: text.lowercased()) }
}

/// How the uploader reacts to failures, as configured by the `httpConfig` object that Segment's
/// CDN settings carry in `integrations["Segment.io"].httpConfig`. Defaults follow the current
/// Segment SDK policy (4xx drop except 408/410/429/460, 5xx retry except 501/505, backoff from
/// 0.5 s, at most 300 s per wait and 12 h in total, 10 % jitter).
///
/// Fields read (all optional; unknown keys are ignored, wrong types fall back to the default and
/// produce a warning, out-of-range numbers are clamped with a warning):
///
///     httpConfig.rateLimitConfig.enabled               Bool    true   honour 429 Retry-After
///     httpConfig.rateLimitConfig.maxRetryCount         Int     100    429s before the batch is dropped (0…1000)
///     httpConfig.rateLimitConfig.maxRetryInterval      Double  300    cap on Retry-After, seconds (1…3600)
///     httpConfig.rateLimitConfig.maxRateLimitDuration  Double  43200  total time rate-limited before drop (60…604800)
///     httpConfig.backoffConfig.enabled                 Bool    true   false: no in-process retries, keep the batch
///     httpConfig.backoffConfig.maxRetryCount           Int     100    retryable failures before drop (0…1000)
///     httpConfig.backoffConfig.baseBackoffInterval     Double  0.5    first wait, seconds (0.1…300)
///     httpConfig.backoffConfig.maxBackoffInterval      Double  300    cap per wait, seconds (0.1…86400)
///     httpConfig.backoffConfig.maxTotalBackoffDuration Double  43200  total time retrying before drop (60…604800)
///     httpConfig.backoffConfig.jitterPercent           Double  10     random extra, % of the wait (0…100)
///     httpConfig.backoffConfig.default4xxBehavior      "drop"|"retry"  drop
///     httpConfig.backoffConfig.default5xxBehavior      "drop"|"retry"  retry
///     httpConfig.backoffConfig.unknownCodeBehavior     "drop"|"retry"  drop   (1xx/3xx and codes ≥ 600)
///     httpConfig.backoffConfig.statusCodeOverrides     {"<code>": "drop"|"retry"}  replaces the default map
///
/// Field names are those of analytics-kotlin / analytics-swift / analytics-react-native.
package struct RetryPolicy: Sendable, Equatable {
    package var rateLimitEnabled = true
    package var rateLimitMaxRetryCount = 100
    package var maxRetryInterval = 300.0
    package var maxRateLimitDuration = 43_200.0

    package var backoffEnabled = true
    package var maxRetryCount = 100
    package var baseBackoffInterval = 0.5
    package var maxBackoffInterval = 300.0
    package var maxTotalBackoffDuration = 43_200.0
    package var jitterPercent = 10.0
    package var default4xxBehavior = RetryBehavior.drop
    package var default5xxBehavior = RetryBehavior.retry
    package var unknownCodeBehavior = RetryBehavior.drop
    package var statusCodeOverrides: [Int: RetryBehavior] = RetryPolicy.defaultOverrides

    package static let defaultOverrides: [Int: RetryBehavior] = [
        408: .retry, 410: .retry, 429: .retry, 460: .retry, 501: .drop, 505: .drop,
    ]

    package init() {}

    /// The Segment defaults.
    package static let standard = RetryPolicy()

    /// Reads an `httpConfig` object leniently. Never throws: a problem becomes a warning (naming the
    /// JSON path) and the default for that field stays.
    package init(httpConfig: JSON?, warnings: inout [String]) {
        self.init()
        guard let httpConfig, !httpConfig.isNull else { return }
        guard let root = httpConfig.objectValue else {
            warnings.append("httpConfig: expected an object, using the default retry policy")
            return
        }
        var reader = FieldReader(warnings: warnings)
        if let rate = reader.object(root, "rateLimitConfig", path: "httpConfig.rateLimitConfig") {
            let p = "httpConfig.rateLimitConfig"
            reader.bool(rate, "enabled", p, into: &rateLimitEnabled)
            reader.int(rate, "maxRetryCount", p, range: 0...1000, into: &rateLimitMaxRetryCount)
            reader.double(rate, "maxRetryInterval", p, range: 1...3600, into: &maxRetryInterval)
            reader.double(rate, "maxRateLimitDuration", p, range: 60...604_800, into: &maxRateLimitDuration)
        }
        if let back = reader.object(root, "backoffConfig", path: "httpConfig.backoffConfig") {
            let p = "httpConfig.backoffConfig"
            reader.bool(back, "enabled", p, into: &backoffEnabled)
            reader.int(back, "maxRetryCount", p, range: 0...1000, into: &maxRetryCount)
            reader.double(back, "baseBackoffInterval", p, range: 0.1...300, into: &baseBackoffInterval)
            reader.double(back, "maxBackoffInterval", p, range: 0.1...86_400, into: &maxBackoffInterval)
            reader.double(back, "maxTotalBackoffDuration", p, range: 60...604_800, into: &maxTotalBackoffDuration)
            reader.double(back, "jitterPercent", p, range: 0...100, into: &jitterPercent)
            reader.behavior(back, "default4xxBehavior", p, into: &default4xxBehavior)
            reader.behavior(back, "default5xxBehavior", p, into: &default5xxBehavior)
            reader.behavior(back, "unknownCodeBehavior", p, into: &unknownCodeBehavior)
            if let overrides = reader.object(back, "statusCodeOverrides", path: "\(p).statusCodeOverrides") {
                var map: [Int: RetryBehavior] = [:]
                for (key, value) in overrides {
                    let path = "\(p).statusCodeOverrides.\(key)"
                    guard let code = Int(key), (100...599).contains(code) else {
                        reader.warnings.append("\(path): not an HTTP status code, ignored")
                        continue
                    }
                    guard let text = value.stringValue, let b = RetryBehavior(lenient: text) else {
                        reader.warnings.append("\(path): expected \"drop\" or \"retry\", ignored")
                        continue
                    }
                    map[code] = b
                }
                statusCodeOverrides = map
            }
        }
        warnings = reader.warnings
    }

    /// Convenience: the policy and the warnings.
    package static func parse(httpConfig: JSON?) -> (policy: RetryPolicy, warnings: [String]) {
        var warnings: [String] = []
        let policy = RetryPolicy(httpConfig: httpConfig, warnings: &warnings)
        return (policy, warnings)
    }

    /// The policy configured by CDN settings (`integrations["Segment.io"].httpConfig`).
    package static func parse(settings: JSONObject) -> (policy: RetryPolicy, warnings: [String]) {
        parse(httpConfig: settings["integrations"]?["Segment.io"]?["httpConfig"])
    }

    // MARK: Decisions

    /// How a response status is handled.
    package enum StatusClass: Sendable, Equatable {
        case success
        /// 429 with rate limiting enabled: wait `Retry-After`.
        case rateLimited
        case retry
        case drop
    }

    /// Resolution order: 2xx success; overrides; 429 rate limiting (when enabled); default 4xx/5xx
    /// behaviour; anything else the unknown-code behaviour.
    package func classify(status: Int) -> StatusClass {
        if (200..<300).contains(status) { return .success }
        if status == 429 && rateLimitEnabled { return .rateLimited }
        if let b = statusCodeOverrides[status] { return b == .retry ? .retry : .drop }
        let b: RetryBehavior
        switch status {
        case 400..<500: b = default4xxBehavior
        case 500..<600: b = default5xxBehavior
        default: b = unknownCodeBehavior
        }
        return b == .retry ? .retry : .drop
    }

    /// Wait before retry number `failures` (1 = after the first failure):
    /// `min(base · 2^(failures-1), maxBackoffInterval)` plus up to `jitterPercent` % of it, where
    /// `random` is uniform in [0, 1); the result never exceeds `maxBackoffInterval`.
    package func backoff(failures: Int, random: Double) -> Double {
        let exponent = Double(max(0, min(failures - 1, 60)))
        let raw = min(baseBackoffInterval * Double.pow2(exponent), maxBackoffInterval)
        let jitter = raw * (jitterPercent / 100) * max(0, min(random, 1))
        return min(raw + jitter, maxBackoffInterval)
    }
}

extension Double {
    fileprivate static func pow2(_ e: Double) -> Double {
        var r = 1.0
        var i = 0.0
        while i < e { r *= 2; i += 1 }
        return r
    }
}

/// Reads typed fields from a JSON object, collecting warnings instead of failing.
private struct FieldReader {
    var warnings: [String]

    mutating func object(_ o: JSONObject, _ key: String, path: String) -> JSONObject? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let obj = v.objectValue else {
            warnings.append("\(path): expected an object, ignored")
            return nil
        }
        return obj
    }

    mutating func bool(_ o: JSONObject, _ key: String, _ p: String, into target: inout Bool) {
        guard let v = o[key], !v.isNull else { return }
        guard let b = v.boolValue else { warnings.append("\(p).\(key): expected a boolean, ignored"); return }
        target = b
    }

    mutating func double(_ o: JSONObject, _ key: String, _ p: String, range: ClosedRange<Double>, into target: inout Double) {
        guard let v = o[key], !v.isNull else { return }
        guard let d = v.doubleValue, d.isFinite else { warnings.append("\(p).\(key): expected a number, ignored"); return }
        let clamped = min(max(d, range.lowerBound), range.upperBound)
        if clamped != d { warnings.append("\(p).\(key): \(d) clamped to \(clamped)") }
        target = clamped
    }

    mutating func int(_ o: JSONObject, _ key: String, _ p: String, range: ClosedRange<Int>, into target: inout Int) {
        guard let v = o[key], !v.isNull else { return }
        guard let d = v.doubleValue, d.isFinite else { warnings.append("\(p).\(key): expected a number, ignored"); return }
        let n = Int(max(-1e9, min(1e9, d.rounded(.down))))
        let clamped = min(max(n, range.lowerBound), range.upperBound)
        if clamped != n || Double(n) != d { warnings.append("\(p).\(key): \(d) clamped to \(clamped)") }
        target = clamped
    }

    mutating func behavior(_ o: JSONObject, _ key: String, _ p: String, into target: inout RetryBehavior) {
        guard let v = o[key], !v.isNull else { return }
        guard let s = v.stringValue, let b = RetryBehavior(lenient: s) else {
            warnings.append("\(p).\(key): expected \"drop\" or \"retry\", ignored")
            return
        }
        target = b
    }
}
