import Synchronization
/// Segment's destination filters for one destination: a plugin that lives in that destination's
/// own timeline, so a filtered or dropped event changes what this destination receives and
/// nothing else.
///
/// The compiled filter is rebuilt on every settings update (initial and refresh) and swapped in
/// whole, so an event is judged entirely by the old rules or entirely by the new ones. Until the
/// first settings arrive it lets everything through (no rules are known). When a rule for this
/// destination is invalid the destination fails closed — it receives nothing — and the problem
/// is reported once, as a settings error, until the settings change.
///
/// Segment's servers already apply the rules to cloud-mode traffic, so this plugin is normally
/// not added to the `Segment.io` destination (``RoutingRules/segmentDestinationKey``).
package final class DestinationFilterPlugin: Plugin, KeepsOrDropsOnly, PassesEverythingAtTimes {
    /// Filters run first in the destination's timeline, so later plugins never see what they remove.
    package let type: PluginType = .before
    /// The destination whose rules (and the global rules) this plugin applies.
    package let destinationKey: String

    private let random: @Sendable () -> Double
    private let state: Locked<State>
    /// No rules apply to this destination: its delivery plan leaves the filter out.
    private let idle = Atomic<Bool>(true)
    /// The plan version of the timeline it filters for, bumped when `idle` changes.
    private let owner = Locked<PlanVersion?>(nil)

    private struct State {
        var filter = DestinationFilter.passThrough
        var problems: [RoutingRuleProblem] = []
        var lastReportedFailure: String?
        var report: (@Sendable (AnalyticsError) -> Void)?
    }

    /// `random` serves `sample_event` without a path; it must return values in [0, 1).
    package init(destinationKey: String, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.destinationKey = destinationKey
        self.random = random
        self.state = Locked(State())
    }

    /// The filter in force.
    package var filter: DestinationFilter { state.withLock { $0.filter } }

    /// Every problem in the current settings' routing rules (also those of other destinations).
    package var problems: [RoutingRuleProblem] { state.withLock { $0.problems } }

    package func configure(analytics: Analytics) {
        let report = analytics.report
        state.withLock { $0.report = report }
    }

    var passesEverything: Bool { idle.load(ordering: .acquiring) }

    func attach(to timeline: Timeline) { owner.withLock { $0 = timeline.stagesVersion } }

    package func execute(_ event: Event) -> Event? {
        let filter = state.withLock { $0.filter }
        return filter.apply(event).event
    }

    package func update(settings: Settings, type: UpdateType) {
        // Compiled outside the lock: events keep flowing under the old rules meanwhile.
        let rules = RoutingRules(settings: settings.json, random: random)
        let filter = rules.filter(forDestination: destinationKey)
        let failure = filter.failure
        let (report, isNew) = state.withLock { s -> ((@Sendable (AnalyticsError) -> Void)?, Bool) in
            s.filter = filter
            s.problems = rules.problems
            let isNew = failure != nil && failure != s.lastReportedFailure
            s.lastReportedFailure = failure
            return (s.report, isNew)
        }
        if idle.exchange(filter.isPassThrough, ordering: .acquiringAndReleasing) != filter.isPassThrough {
            owner.withLock { $0 }?.bump()
        }
        if isNew, let failure, let report {
            report(.settings("destination \(destinationKey) receives no events: \(failure)"))
        }
    }
}

extension DestinationPlugin {
    /// Adds Segment's destination filters for this destination to its own timeline.
    @discardableResult
    package func addDestinationFilters(random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) -> DestinationFilterPlugin {
        let plugin = DestinationFilterPlugin(destinationKey: key, random: random)
        plugin.attach(to: timeline)
        timeline.add(plugin)
        return plugin
    }
}
