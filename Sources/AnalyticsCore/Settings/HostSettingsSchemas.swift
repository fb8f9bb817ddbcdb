/// The schemas of the parts of a settings document the host itself reads (the libraries declare
/// theirs through `AH_EXT_SETTINGS_SCHEMA`). Unknown keys are warnings with "did you mean" — the
/// CDN adds keys over time and they must pass through — except in a routing rule, where an unknown
/// key is an error: a misspelled `destinationName` would turn a rule for one destination into a
/// rule for every destination.
package enum HostSettingsSchemas {
    /// The top level of the CDN document (REFERENCE §3; `signals` is this host's own).
    static let document = SettingsSchema([
        .object("integrations", required: true, "every destination of the source, by key, with its settings"),
        .object("plan", "the tracking plan (track, identify, group)"),
        .object("middlewareSettings", "destination filters (routingRules)"),
        .object("edgeFunction", "the LivePlugins bundle: downloadURL and version"),
        .object("signals", "Analytics Live signals: buffer size, broadcasters"),
        SettingDeclaration("enabledMiddleware", .any, "the CDN's source middleware switches (passed through)"),
        SettingDeclaration("metrics", .any, "the CDN's telemetry sampling (passed through)"),
        SettingDeclaration("consentSettings", .any, "consent categories (passed through)"),
        SettingDeclaration("remotePlugins", .any, "the CDN's remote plugins (passed through)"),
        SettingDeclaration("autoInstrumentationSettings", .any, "Analytics Live auto-instrumentation (passed through)"),
        SettingDeclaration("analyticsNextEnabled", .any, "analytics.js's switch (passed through)"),
        SettingDeclaration("legacyVideoPluginsEnabled", .any, "analytics.js's switch (passed through)"),
    ])

    /// `integrations["Segment.io"]` (REFERENCE §3 and §4; the types of httpConfig's fields are
    /// checked by `RetryPolicy`).
    static let segment = SettingsSchema([
        .string("apiKey", "the source's write key (run --write-key must agree with it)"),
        .string("apiHost", default: "api.segment.io/v1", "where batches are uploaded (host[/path], or a URL)"),
        .object("httpConfig", "the retry policy: rateLimitConfig, backoffConfig"),
        .array("unbundledIntegrations", "destinations the server sends to (passed through)"),
        .boolean("addBundledMetadata", "the CDN's bundling metadata switch (passed through)"),
        .object("maybeBundledConfigIds", "the CDN's bundling metadata (passed through)"),
        .object("versionSettings", "the CDN's version metadata (passed through)"),
    ])

    static let httpConfig = SettingsSchema([
        SettingDeclaration("rateLimitConfig", .any, "429 handling"),
        SettingDeclaration("backoffConfig", .any, "retries with backoff"),
    ])
    static let rateLimitConfig = SettingsSchema(["enabled", "maxRetryCount", "maxRetryInterval", "maxRateLimitDuration"].map {
        SettingDeclaration($0, .any, "see docs/delivery.md")
    })
    static let backoffConfig = SettingsSchema(["enabled", "maxRetryCount", "baseBackoffInterval", "maxBackoffInterval", "maxTotalBackoffDuration",
                                               "jitterPercent", "default4xxBehavior", "default5xxBehavior", "unknownCodeBehavior",
                                               "statusCodeOverrides"].map { SettingDeclaration($0, .any, "see docs/delivery.md") })

    /// The keys the host reads from any destination's settings object, besides the library's own.
    static let destination: [SettingDeclaration] = [
        .boolean("durable", "keep its events on disk until answered (docs/durability.md)"),
        SettingDeclaration("isolation", [.string, .object], "\"process\" or {\"mode\", \"allow\"} (docs/isolation.md)"),
        // What the CDN adds to every destination's object.
        SettingDeclaration("versionSettings", .any, "the CDN's version metadata (passed through)"),
        SettingDeclaration("type", .any, "the CDN's destination type (passed through)"),
        SettingDeclaration("bundlingStatus", .any, "the CDN's bundling status (passed through)"),
    ]

    /// `integrations[key].isolation` as an object.
    static let isolation = SettingsSchema([
        .string("mode", "\"process\" or \"in-process\""),
        .array("allow", "grants beyond the jail: \"network\", \"files:/path\", \"read:/path\""),
    ])

    /// One routing rule (REFERENCE §5); `scope` and `target_type` are the CDN's.
    static let routingRule = SettingsSchema([
        .string("destinationName", required: true, "the destination the rule filters"),
        .array("matchers", "the conditions, in order"),
        .array("transformers", "for each matcher, what to do to a matching event"),
        .string("scope", "the CDN's rule scope (passed through)"),
        .string("target_type", "the CDN's rule target (passed through)"),
    ])
    static let matcher = SettingsSchema([
        SettingDeclaration("type", .any, "\"all\" or \"fql\""), SettingDeclaration("ir", .any, "the FQL expression, compiled"),
        SettingDeclaration("config", .any, "the CDN's copy of the expression (passed through)"),
    ])

    /// `plan.track.<event>` (and identify, group).
    static let planEvent = SettingsSchema([
        .boolean("enabled", default: true, "false blocks the event for device-mode destinations"),
        .object("integrations", "which destinations receive it (the integrations option's rules)"),
    ])
    static let planSections: Set<String> = ["track", "identify", "group"]

    /// Every schema problem of a document: the host's parts, and each destination named in
    /// `integrations` whose library declared a schema (`libraries`, by key). Structure problems
    /// (`SettingsValidator.problems`) are not repeated here.
    package static func problems(in root: JSONObject, source: String, libraries: [String: SettingsSchema]) -> [SettingsProblem] {
        // The types of the top level's objects are the structure check's (SettingsValidator.problems).
        var out = document.problems(in: root, at: "", source: source, what: "the settings document").filter(\.isWarning)
        if let integrations = root["integrations"]?.objectValue {
            for (key, value) in integrations {
                guard let settings = value.objectValue else { continue }
                let at = "integrations.\(key)"
                if key == RoutingRules.segmentDestinationKey {
                    // Its types are the structure check's (apiKey, apiHost, httpConfig) or nobody's (passed through).
                    out += segment.problems(in: settings, at: at, source: source, what: "Segment.io's settings").filter(\.isWarning)
                    out += httpConfigProblems(settings["httpConfig"], at: "\(at).httpConfig", source: source)
                    continue
                }
                out += destinationProblems(settings, key: key, schema: libraries[key], at: at, source: source)
            }
        }
        if let plan = root["plan"]?.objectValue {
            for (section, value) in plan {
                guard planSections.contains(section) else {
                    var message = "unknown section of the tracking plan, ignored"
                    if let near = NearestName.suggestion(for: section, among: planSections.sorted()) { message += "; did you mean \"\(near)\"?" }
                    out.append(SettingsProblem(source: source, path: "plan.\(section)", message: message, severity: .warning))
                    continue
                }
                for (event, rule) in value.objectValue ?? [:] {
                    guard let rule = rule.objectValue else { continue }
                    out += planEvent.problems(in: rule, at: "plan.\(section).\(event)", source: source, what: "a tracking plan entry")
                }
            }
        }
        if let rules = root["middlewareSettings"]?["routingRules"]?.arrayValue {
            for (i, rule) in rules.enumerated() {
                guard let rule = rule.objectValue else { continue }
                let at = "middlewareSettings.routingRules[\(i)]"
                // Types are the filter compiler's to report (RoutingRules); here: unknown keys and a
                // missing destinationName, both errors.
                for p in routingRule.problems(in: rule, at: at, source: source, what: "a routing rule", unknownIsError: true)
                where p.message.hasPrefix("unknown") {
                    out.append(p)
                }
                if rule["destinationName"] == nil || rule["destinationName"]!.isNull {
                    out.append(SettingsProblem(source: source, path: "\(at).destinationName", message:
                        "missing: every rule names the destination it filters (without it, the rule would apply to every "
                        + "device-mode destination: write one rule per destination)"))
                }
                for (j, matcher) in (rule["matchers"]?.arrayValue ?? []).enumerated() {
                    guard let matcher = matcher.objectValue else { continue }
                    out += self.matcher.problems(in: matcher, at: "\(at).matchers[\(j)]", source: source, what: "a matcher")
                }
            }
        }
        return out
    }

    /// A destination's settings: the host's keys, then the library's own when it declared them
    /// (without a schema only the host's keys are checked and nothing is unknown).
    package static func destinationProblems(_ settings: JSONObject, key: String, schema: SettingsSchema?, at: String, source: String) -> [SettingsProblem] {
        var out: [SettingsProblem]
        if let schema {
            out = schema.problems(in: settings, at: at, source: source, what: "\(key)'s settings", alsoKnown: destination)
        } else {
            var known: JSONObject = [:]
            for (name, value) in settings where destination.contains(where: { $0.name == name }) { known[name] = value }
            out = SettingsSchema([]).problems(in: known, at: at, source: source, what: "\(key)'s settings", alsoKnown: destination)
        }
        switch settings["isolation"] {
        case .string(let mode)?:
            if IsolationMode(rawValue: mode) == nil {
                out.append(SettingsProblem(source: source, path: "\(at).isolation", message: isolationModeProblem(mode)))
            }
        case .object(let o)?:
            out += isolation.problems(in: o, at: "\(at).isolation", source: source, what: "isolation")
            if let mode = o["mode"]?.stringValue, IsolationMode(rawValue: mode) == nil {
                out.append(SettingsProblem(source: source, path: "\(at).isolation.mode", message: isolationModeProblem(mode)))
            }
            if o["allow"]?.arrayValue != nil {
                for problem in JailGrants(settings: settings).problems {
                    out.append(SettingsProblem(source: source, path: "\(at).isolation.allow", message: problem))
                }
            }
        default: break
        }
        return out
    }

    private static func isolationModeProblem(_ mode: String) -> String {
        let modes = IsolationMode.allCases.map(\.rawValue)
        var message = "\"\(mode)\" is not a mode: \(modes.map { "\"\($0)\"" }.joined(separator: " or "))"
        if let near = NearestName.suggestion(for: mode, among: modes) { message += "; did you mean \"\(near)\"?" }
        return message
    }

    private static func httpConfigProblems(_ value: JSON?, at: String, source: String) -> [SettingsProblem] {
        guard let config = value?.objectValue else { return [] }
        var out = httpConfig.problems(in: config, at: at, source: source, what: "httpConfig")
        if let o = config["rateLimitConfig"]?.objectValue {
            out += rateLimitConfig.problems(in: o, at: "\(at).rateLimitConfig", source: source, what: "rateLimitConfig")
        }
        if let o = config["backoffConfig"]?.objectValue {
            out += backoffConfig.problems(in: o, at: "\(at).backoffConfig", source: source, what: "backoffConfig")
        }
        return out
    }
}
