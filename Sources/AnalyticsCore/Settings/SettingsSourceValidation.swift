/// One thing wrong with a settings document (or with getting one), naming where.
package struct SettingsProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the settings came from: `file /path`, `network <url>`, `cache /path`, `defaults`.
    package var source: String
    /// Dotted JSON path of the offending value (`integrations.Amplitude`); empty for the document
    /// itself or for failures to obtain it.
    package var path: String
    package var message: String
    /// An error makes the document unusable as it stands (`run` refuses it); a warning names
    /// something that is probably a mistake but changes nothing (an unknown key, ignored).
    package var severity: Severity

    package enum Severity: String, Sendable, Equatable {
        case error, warning
    }

    package init(source: String, path: String = "", message: String, severity: Severity = .error) {
        self.source = source
        self.path = path
        self.message = message
        self.severity = severity
    }

    package var isWarning: Bool { severity == .warning }

    package var description: String {
        path.isEmpty ? "settings from \(source): \(message)" : "settings from \(source): \(path): \(message)"
    }
}

/// Structural checks for the CDN settings shape. Only the parts the host relies on are checked;
/// everything else, known or not, passes through untouched.
package enum SettingsValidator {
    /// Every problem found (empty = usable).
    package static func problems(in json: JSON, source: String) -> [SettingsProblem] {
        var out: [SettingsProblem] = []
        func fail(_ path: String, _ message: String) { out.append(SettingsProblem(source: source, path: path, message: message)) }

        guard let root = json.objectValue else {
            fail("", "expected a JSON object at the top level, found \(JSON.kindName(json))")
            return out
        }
        if let integrations = root["integrations"] {
            if let map = integrations.objectValue {
                for (key, value) in map where value.objectValue == nil {
                    fail("integrations.\(key)", "expected an object, found \(JSON.kindName(value))")
                }
                if let segment = map["Segment.io"]?.objectValue {
                    for field in ["apiKey", "apiHost"] {
                        if let v = segment[field], v.stringValue == nil, !v.isNull {
                            fail("integrations.Segment.io.\(field)", "expected a string, found \(JSON.kindName(v))")
                        }
                    }
                    if let v = segment["httpConfig"], v.objectValue == nil, !v.isNull {
                        fail("integrations.Segment.io.httpConfig", "expected an object, found \(JSON.kindName(v))")
                    }
                }
            } else {
                fail("integrations", "expected an object, found \(JSON.kindName(integrations))")
            }
        } else {
            fail("integrations", "missing (every settings document names its destinations there)")
        }
        if let plan = root["plan"], !plan.isNull {
            if let p = plan.objectValue {
                for (section, value) in p {
                    guard let events = value.objectValue else {
                        fail("plan.\(section)", "expected an object, found \(JSON.kindName(value))")
                        continue
                    }
                    for (event, rule) in events where rule.objectValue == nil {
                        fail("plan.\(section).\(event)", "expected an object, found \(JSON.kindName(rule))")
                    }
                }
            } else {
                fail("plan", "expected an object, found \(JSON.kindName(plan))")
            }
        }
        if let middleware = root["middlewareSettings"], !middleware.isNull {
            if let m = middleware.objectValue {
                if let rules = m["routingRules"], !rules.isNull {
                    if let list = rules.arrayValue {
                        for (i, rule) in list.enumerated() where rule.objectValue == nil {
                            fail("middlewareSettings.routingRules.\(i)", "expected an object, found \(JSON.kindName(rule))")
                        }
                    } else {
                        fail("middlewareSettings.routingRules", "expected an array, found \(JSON.kindName(rules))")
                    }
                }
            } else {
                fail("middlewareSettings", "expected an object, found \(JSON.kindName(middleware))")
            }
        }
        if let edge = root["edgeFunction"], !edge.isNull, edge.objectValue == nil {
            fail("edgeFunction", "expected an object, found \(JSON.kindName(edge))")
        }
        return out
    }

}

/// Settings could not be obtained or used; `problems` says every reason found.
package struct SettingsSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    package var problems: [SettingsProblem]
    package init(_ problems: [SettingsProblem]) { self.problems = problems }
    package init(_ problem: SettingsProblem) { self.problems = [problem] }
    package var description: String { problems.map(\.description).joined(separator: "; ") }
}
