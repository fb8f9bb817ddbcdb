/// Something wrong with a routing rule in the settings, found when the rules were compiled.
/// A destination that a broken rule applies to drops every event (fails closed), because filters
/// often exist to keep personal data away from a destination.
public struct RoutingRuleProblem: Sendable, Equatable, CustomStringConvertible {
    /// Index of the rule in `routingRules`; nil when the list itself is malformed.
    public let ruleIndex: Int?
    /// Where in the settings, e.g. `middlewareSettings.routingRules[2].matchers[0].ir`.
    public let path: String
    public let reason: String
    /// The rule's `destinationName` (nil: a global rule, or none could be read).
    public internal(set) var destinationName: String?
    /// Index of the matcher (and of its transformer list) the problem is in, if any.
    public let matcherIndex: Int?

    init(ruleIndex: Int?, path: String, reason: String, destinationName: String? = nil, matcherIndex: Int? = nil) {
        self.ruleIndex = ruleIndex
        self.path = path
        self.reason = reason
        self.destinationName = destinationName
        self.matcherIndex = matcherIndex
    }

    public var description: String { "\(path): \(reason)" }
}
