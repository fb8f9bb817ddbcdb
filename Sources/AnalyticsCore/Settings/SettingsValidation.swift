/// The whole check of a settings document, shared by `analytics-host run` (which refuses settings
/// that fail it) and `analytics-host check-settings` (which lists what it finds), so that the two
/// can never disagree about a file.
///
/// Beyond the structure that ``SettingsValidator/problems(in:source:)`` checks (without which the
/// client cannot use a document at all and falls back), it covers what the client would otherwise
/// repair quietly at run time: a Segment.io `apiHost` or `httpConfig` field of the wrong type or out
/// of range (the default would apply), and destination filter rules that do not compile (their
/// destinations would drop every event). And the schemas (`HostSettingsSchemas`): unknown keys
/// (warnings, with "did you mean"; errors in a routing rule), a routing rule without
/// `destinationName`, and each destination's settings against the schema its library declared
/// (`libraries`, by key: wrong types and missing required settings are errors).
extension SettingsValidator {
    package static func allProblems(in json: JSON, source: String, libraries: [String: SettingsSchema] = [:]) -> [SettingsProblem] {
        var out = problems(in: json, source: source)
        guard case .object(let root) = json else { return out }

        if let segment = root["integrations"]?["Segment.io"]?.objectValue {
            let at = "integrations.Segment.io"
            if case .string(let host)? = segment["apiHost"] {
                if host.isEmpty {
                    out.append(SettingsProblem(source: source, path: "\(at).apiHost", message: "expected a non-empty string"))
                } else if case .failure(let e) = Result(catching: { () throws(UploadEndpointError) in
                    try UploadConfiguration.url(base: host, path: "batch")
                }) {
                    out.append(SettingsProblem(source: source, path: "\(at).apiHost", message: e.description))
                }
            }
            if case .object? = segment["httpConfig"] {
                for warning in RetryPolicy.parse(httpConfig: segment["httpConfig"]).warnings {
                    out.append(problem(fromWarning: warning, source: source))
                }
            }
        }

        for rule in RoutingRules(settings: root).problems {
            var where_ = ""
            if let index = rule.ruleIndex {
                where_ = rule.destinationName.map { "rule \(index) for destination \"\($0)\"" } ?? "rule \(index) (all destinations)"
                if let matcher = rule.matcherIndex { where_ += ", matcher \(matcher)" }
                where_ += ": "
            }
            out.append(SettingsProblem(source: source, path: rule.path, message: where_ + rule.reason))
        }
        out += HostSettingsSchemas.problems(in: root, source: source, libraries: libraries)
        return out
    }

    /// `RetryPolicy` warnings read "httpConfig.…: message"; split them back into path and message.
    private static func problem(fromWarning warning: String, source: String) -> SettingsProblem {
        guard let colon = warning.range(of: ": ") else { return SettingsProblem(source: source, message: warning) }
        return SettingsProblem(source: source, path: "integrations.Segment.io." + String(warning[..<colon.lowerBound]),
                               message: String(warning[colon.upperBound...]))
    }
}
