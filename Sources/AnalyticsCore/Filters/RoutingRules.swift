/// Segment's destination filters (`middlewareSettings.routingRules` in the settings), compiled
/// once per settings update into native evaluators.
///
/// Building never throws: every defect is collected in ``problems`` and the destinations that a
/// defective rule applies to fail closed (see ``filter(forDestination:)``). A rule without
/// `destinationName` applies to every destination; whether to filter the Segment upload itself
/// (``segmentDestinationKey``) is the caller's decision.
package struct RoutingRules: Sendable {
    /// The destination key of the Segment upload, which global rules are normally not applied to.
    package static let segmentDestinationKey = "Segment.io"

    /// A rule as compiled, or the reason it is unusable.
    struct Rule: Sendable {
        let index: Int
        /// nil: applies to every destination.
        let destinationName: String?
        let body: Result<[Step], Invalid>
    }

    struct Step: Sendable {
        let matcher: Matcher
        let transformers: [FilterTransformer]
    }

    enum Matcher: Sendable {
        case all
        case never
        case expression(FilterExpression)
    }

    struct Invalid: Error, Sendable {
        let index: Int?
        let reason: String
    }

    let rules: [Rule]
    /// Set when `routingRules` is not a list at all: every destination fails closed.
    let listProblem: Invalid?
    let random: @Sendable () -> Double

    /// Everything wrong with the rules, in settings order.
    package let problems: [RoutingRuleProblem]

    /// Compiles the rules found in `settings` (the whole CDN settings object). Absent or null
    /// `middlewareSettings` / `routingRules` mean no rules. `random` serves `sample_event`
    /// without a path and must return values in [0, 1).
    package init(settings: JSONObject, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.random = random
        let base = "middlewareSettings.routingRules"
        var problems: [RoutingRuleProblem] = []
        var rules: [Rule] = []
        var listProblem: Invalid?

        let list: [JSON]
        switch settings["middlewareSettings"] {
        case nil, .null?:
            list = []
        case .object(let middleware)?:
            switch middleware["routingRules"] {
            case nil, .null?: list = []
            case .array(let items)?: list = items
            case let other?:
                let reason = "expected an array of rules, found \(JSON.kindName(other))"
                problems.append(RoutingRuleProblem(ruleIndex: nil, path: base, reason: reason))
                listProblem = Invalid(index: nil, reason: "\(base) is invalid: \(reason)")
                list = []
            }
        case let other?:
            let reason = "expected an object, found \(JSON.kindName(other))"
            problems.append(RoutingRuleProblem(ruleIndex: nil, path: "middlewareSettings", reason: reason))
            listProblem = Invalid(index: nil, reason: "middlewareSettings is invalid: \(reason)")
            list = []
        }

        for (index, json) in list.enumerated() {
            rules.append(RoutingRules.compileRule(json, index: index, path: "\(base)[\(index)]", problems: &problems))
        }
        self.rules = rules
        self.listProblem = listProblem
        self.problems = problems
    }

    /// No rules at all.
    package init() {
        self.init(settings: JSONObject())
    }

    /// The filter for one destination: the global rules and the rules naming `key`, in settings
    /// order. If any of them is invalid the filter drops every event, naming the first bad rule.
    package func filter(forDestination key: String) -> DestinationFilter {
        if let listProblem { return DestinationFilter(failure: listProblem.reason, random: random) }
        var steps: [(rule: Int, step: Step)] = []
        for rule in rules where rule.destinationName == nil || rule.destinationName == key {
            switch rule.body {
            case .failure(let invalid):
                return DestinationFilter(failure: "filter rule \(rule.index) is invalid: \(invalid.reason)", random: random)
            case .success(let ruleSteps):
                for step in ruleSteps { steps.append((rule.index, step)) }
            }
        }
        return DestinationFilter(steps: steps, random: random)
    }

    /// Destination names that some rule targets by name (global rules are not listed).
    package var namedDestinations: [String] {
        var seen: [String] = []
        for rule in rules { if let n = rule.destinationName, !seen.contains(n) { seen.append(n) } }
        return seen
    }

    // MARK: Compiling one rule

    private static func compileRule(_ json: JSON, index: Int, path: String, problems: inout [RoutingRuleProblem]) -> Rule {
        var firstReason: String?
        let firstProblem = problems.count
        func problem(_ at: String, _ reason: String, matcher: Int? = nil) {
            problems.append(RoutingRuleProblem(ruleIndex: index, path: at, reason: reason, matcherIndex: matcher))
            if firstReason == nil { firstReason = "\(at): \(reason)" }
        }
        defer {
            if case .string(let name)? = json["destinationName"] {
                for i in firstProblem..<problems.count { problems[i].destinationName = name }
            }
        }

        guard case .object(let o) = json else {
            problem(path, "a rule must be an object, found \(JSON.kindName(json))")
            return Rule(index: index, destinationName: nil, body: .failure(Invalid(index: index, reason: firstReason!)))
        }

        // A rule whose target cannot be read is treated as global so that it fails closed everywhere.
        var destinationName: String?
        switch o["destinationName"] {
        case nil, .null?: break
        case .string(let name)?: destinationName = name
        case let other?: problem("\(path).destinationName", "expected a string, found \(JSON.kindName(other))")
        }

        var matchers: [JSON] = []
        switch o["matchers"] {
        case .array(let m)?: matchers = m
        case nil: problem("\(path).matchers", "missing")
        case let other?: problem("\(path).matchers", "expected an array, found \(JSON.kindName(other))")
        }
        var transformerLists: [JSON] = []
        switch o["transformers"] {
        case .array(let t)?: transformerLists = t
        case nil where matchers.isEmpty: break
        case nil: problem("\(path).transformers", "missing")
        case let other?: problem("\(path).transformers", "expected an array, found \(JSON.kindName(other))")
        }
        if case .array? = o["transformers"], case .array? = o["matchers"], matchers.count != transformerLists.count {
            problem(path, "\(matchers.count) matchers but \(transformerLists.count) transformer lists (they pair up by index)")
        }

        var steps: [Step] = []
        for (i, matcherJSON) in matchers.enumerated() {
            let matcherPath = "\(path).matchers[\(i)]"
            var matcher = Matcher.never
            switch compileMatcher(matcherJSON) {
            case .success(let m): matcher = m
            case .failure(let f): problem(matcherPath + f.position, f.reason, matcher: i)
            }
            var transformers: [FilterTransformer] = []
            if i < transformerLists.count {
                let listPath = "\(path).transformers[\(i)]"
                switch transformerLists[i] {
                case .array(let list):
                    for (j, t) in list.enumerated() {
                        do throws(FilterTransformer.Failure) {
                            transformers.append(try FilterTransformer.compile(t))
                        } catch {
                            problem("\(listPath)[\(j)]\(error.position)", error.reason, matcher: i)
                        }
                    }
                case let other:
                    problem(listPath, "expected an array of transformers, found \(JSON.kindName(other))", matcher: i)
                }
            }
            steps.append(Step(matcher: matcher, transformers: transformers))
        }

        if let firstReason {
            return Rule(index: index, destinationName: destinationName, body: .failure(Invalid(index: index, reason: firstReason)))
        }
        return Rule(index: index, destinationName: destinationName, body: .success(steps))
    }

    /// A matcher's failure; `position` is appended to the matcher's settings path.
    private struct MatcherFailure: Error {
        let position: String
        let reason: String
    }

    private static func compileMatcher(_ json: JSON) -> Result<Matcher, MatcherFailure> {
        guard case .object(let m) = json else {
            return .failure(MatcherFailure(position: "", reason: "a matcher must be an object, found \(JSON.kindName(json))"))
        }
        switch m["type"] {
        case .string("all")?:
            return .success(.all)
        case .string("fql")?:
            let ir: JSON
            switch m["ir"] {
            case nil, .null?, .string("")?:
                return .success(.never)  // empty ir = false
            case .string(let text)?:
                do { ir = try JSON(parsing: text) } catch {
                    return .failure(MatcherFailure(position: ".ir", reason: "not valid JSON: \(error)"))
                }
            case .array(let already)?:
                ir = .array(already)  // tolerated: an ir that arrives already decoded
            case let other?:
                return .failure(MatcherFailure(position: ".ir", reason: "expected a JSON-encoded string, found \(JSON.kindName(other))"))
            }
            do throws(FilterExpressionCompiler.Failure) {
                return .success(.expression(try FilterExpressionCompiler.compile(ir)))
            } catch {
                return .failure(MatcherFailure(position: ".ir", reason: "\(error.position): \(error.reason)"))
            }
        case .string(let other)?:
            return .failure(MatcherFailure(position: ".type", reason: "unknown matcher type \"\(other)\""))
        case let other?:
            return .failure(MatcherFailure(position: ".type", reason: "expected a string, found \(JSON.kindName(other))"))
        case nil:
            return .failure(MatcherFailure(position: ".type", reason: "missing"))
        }
    }
}

/// Something wrong with a routing rule in the settings, found when the rules were compiled.
/// A destination that a broken rule applies to drops every event (fails closed), because filters
/// often exist to keep personal data away from a destination.
package struct RoutingRuleProblem: Sendable, Equatable, CustomStringConvertible {
    /// Index of the rule in `routingRules`; nil when the list itself is malformed.
    package let ruleIndex: Int?
    /// Where in the settings, e.g. `middlewareSettings.routingRules[2].matchers[0].ir`.
    package let path: String
    package let reason: String
    /// The rule's `destinationName` (nil: a global rule, or none could be read).
    package internal(set) var destinationName: String?
    /// Index of the matcher (and of its transformer list) the problem is in, if any.
    package let matcherIndex: Int?

    init(ruleIndex: Int?, path: String, reason: String, destinationName: String? = nil, matcherIndex: Int? = nil) {
        self.ruleIndex = ruleIndex
        self.path = path
        self.reason = reason
        self.destinationName = destinationName
        self.matcherIndex = matcherIndex
    }

    package var description: String { "\(path): \(reason)" }
}
