import Foundation
import Synchronization

/// The pipeline. Every event goes before → enrichment → destination → after; a plugin that
/// returns nil ends the event's trip through this timeline.
///
/// The client owns one timeline; each destination owns another (its before / enrichment / after
/// plugins apply to it alone). Middleware, destination filters and per-destination plugins are all
/// plugins on these timelines — there is no second mechanism.
public final class Timeline: @unchecked Sendable {
    /// The plugin lists, replaced whole on every change so that events read them without copying.
    final class Stages: @unchecked Sendable {
        var before: [Plugin] = []
        var enrichment: [Plugin] = []
        var destinations: [DestinationWorker] = []
        /// Destinations stopped by shutdown ahead of the rest: no longer fed, still listed.
        var retired: [DestinationWorker] = []
        var after: [Plugin] = []
        var utility: [Plugin] = []
        var enabledKeys: Set<String>? = nil  // nil until settings arrive: no gate
        /// Keys whose `integrations` entry is exactly false (the only gate of whole-settings destinations).
        var switchedOffKeys: Set<String> = []
        /// Per destination, whether the settings name it (precomputed: checked for every event).
        var enabled: [Bool] = []
        /// Destinations that want JSON text.
        var encodedConsumers = 0
        /// Whether fan-out gives the event an encoding to share: with several readers of the
        /// text (the first worker to need it writes it for all), or one on the caller's thread
        /// (Segment.io: the size check and it then see the same text). A single worker writes
        /// its own, on its thread: the caller allocates nothing for it.
        var sharesText = false
        var plan: TrackingPlan?

        func copy() -> Stages {
            let s = Stages()
            s.before = before; s.enrichment = enrichment; s.destinations = destinations; s.retired = retired
            s.after = after; s.utility = utility; s.enabledKeys = enabledKeys
            s.switchedOffKeys = switchedOffKeys
            s.encodedConsumers = encodedConsumers
            s.sharesText = sharesText
            s.plan = plan
            return s
        }
        func recomputeGates() {
            enabled = destinations.map { worker in
                let key = worker.destination.key
                if worker.receivesWholeSettings { return !switchedOffKeys.contains(key) }
                return enabledKeys?.contains(key) ?? true
            }
            sharesText = encodedConsumers > 1
                || destinations.contains { $0.isInline && $0.destination is EncodedEventConsumer }
        }
        var all: [Plugin] { before + enrichment + destinations.map(\.destination) + after + utility }
    }

    private let stages = Locked(Stages())
    /// Bumped on every change of `stages` (under its lock), so that a destination's worker can keep
    /// one snapshot across a batch and still see every change before its next event.
    /// Given to plugins that change their part in delivery plans (`PassesEverythingAtTimes`).
    let stagesVersion = PlanVersion()
    /// Serialises fan-out so that every destination sees the same order of events; only fan-out
    /// queues events, so under this lock a destination with room keeps it until we submit.
    private let fanOut = Lock()
    /// Shutdown has begun: destinations are being stopped (producers first). Set under `fanOut`
    /// (so fan-out sees it between two events), read without it by `refusal()`, which is asked
    /// from inside the fan-out itself (a library's `send_event` from an inline destination's plugin).
    private let draining = Atomic<Bool>(false)
    /// The last destinations are stopping: nothing queued now could be delivered.
    private let closed = Atomic<Bool>(false)
    private let state = Locked(State())
    private struct State {
        weak var analytics: Analytics?
        var settings: Settings?
        var queueCapacity = 10_000
        var overflow = OverflowPolicy.dropOldest
        var hookTimeout = 10.0
        var report: @Sendable (AnalyticsError) -> Void = { _ in }
    }

    public init() {}

    // MARK: Plugins

    /// Adds a plugin at the end of its stage. A destination added to the client's timeline gets its
    /// own worker; destinations cannot nest inside another destination's timeline.
    public func add(_ plugin: Plugin) { add(plugin, unlessPresent: false) }

    /// `unlessPresent`: do nothing if the plugin is already in this timeline (checked atomically
    /// with the insertion, for plugins that two threads may attach at once).
    func add(_ plugin: Plugin, unlessPresent: Bool) {
        let (analytics, settings, capacity, overflow, hookTimeout, report) = state.withLock {
            ($0.analytics, $0.settings, $0.queueCapacity, $0.overflow, $0.hookTimeout, $0.report)
        }
        var worker: DestinationWorker?
        if let destination = plugin as? DestinationPlugin, plugin.type == .destination {
            guard analytics != nil else {
                report(.plugin(name: destination.key, message: "a destination cannot be added inside another destination's timeline"))
                return
            }
            destination.timeline.attach(analytics: analytics, report: report, capacity: capacity)
            let feed = (destination as? DurablyQueued)?.durability.flatMap { durability in
                Timeline.openFeed(for: destination.key, durability: durability, analytics: analytics, report: report)
            }
            worker = DestinationWorker(destination: destination, capacity: capacity, overflow: overflow,
                                       hookTimeout: hookTimeout, feed: feed, report: report)
        }
        let added = stages.withLock { current -> Bool in
            if unlessPresent && current.all.contains(where: { $0 === plugin }) { return false }
            let s = current.copy()
            switch plugin.type {
            case .before: s.before.append(plugin)
            case .enrichment: s.enrichment.append(plugin)
            case .destination:
                if let worker {
                    s.destinations.append(worker)
                    if plugin is EncodedEventConsumer { s.encodedConsumers += 1 }
                } else {
                    report(.plugin(name: String(describing: Swift.type(of: plugin)), message: "a destination plugin must conform to DestinationPlugin"))
                }
            case .after: s.after.append(plugin)
            case .utility: s.utility.append(plugin)
            }
            s.recomputeGates()
            current = s
            stagesVersion.bump()
            return true
        }
        guard added else { return }
        if let analytics { plugin.configure(analytics: analytics) }
        if let settings {
            if let worker { worker.submit(.update(settings, .initial)) } else { plugin.update(settings: settings, type: .initial) }
        }
    }

    /// The durable queue of a destination that asks for one; nil (reported: its events then live
    /// in memory) when it cannot be opened.
    private static func openFeed(for key: String, durability: NativeDurability, analytics: Analytics?,
                                 report: @escaping @Sendable (AnalyticsError) -> Void) -> DurableFeed? {
        guard let storage = analytics?.configuration.storageDirectory else { return nil }
        let directory = DurableFeed.directory(storage: storage, key: key)
        do {
            return try DurableFeed(key: key, directory: directory, maxDiskBytes: durability.maxDiskBytes, report: report)
        } catch {
            report(.storage("destination \(key) asks for a durable queue, which cannot be opened at \(directory): \(error); "
                + "its events are kept in memory only (as for any destination) until the client is restarted"))
            return nil
        }
    }

    /// Removes a plugin; a removed destination drains its queue and is shut down.
    public func remove(_ plugin: Plugin) {
        var removedWorker: DestinationWorker?
        stages.withLock { current in
            let s = current.copy()
            s.before.removeAll { $0 === plugin }
            s.enrichment.removeAll { $0 === plugin }
            s.after.removeAll { $0 === plugin }
            s.utility.removeAll { $0 === plugin }
            if let i = s.destinations.firstIndex(where: { $0.destination === plugin }) {
                removedWorker = s.destinations.remove(at: i)
                s.encodedConsumers = s.destinations.filter { $0.destination is EncodedEventConsumer }.count
            }
            s.recomputeGates()
            current = s
            stagesVersion.bump()
        }
        if let removedWorker {
            let timeout = state.withLock { $0.hookTimeout }
            if !removedWorker.stop(timeout: timeout) { removedWorker.abandon(after: timeout) }
        } else if !(plugin is DestinationPlugin) { plugin.shutdown() }
    }

    /// Every plugin of one type, in order.
    public func plugins(of type: PluginType) -> [Plugin] {
        let s = stages.withLock { $0 }
        switch type {
        case .before: return s.before
        case .enrichment: return s.enrichment
        case .destination: return (s.retired + s.destinations).map(\.destination)
        case .after: return s.after
        case .utility: return s.utility
        }
    }

    /// The destination with this key, if one was added.
    public func find(key: String) -> DestinationPlugin? {
        let s = stages.withLock { $0 }
        return (s.destinations.first { $0.destination.key == key } ?? s.retired.first { $0.destination.key == key })?.destination
    }

    /// The worker of the destination with this key (tests wait for an abandoned one to end).
    func worker(forKey key: String) -> DestinationWorker? {
        let s = stages.withLock { $0 }
        return s.destinations.first { $0.destination.key == key } ?? s.retired.first { $0.destination.key == key }
    }

    /// Counters for the destination with this key.
    public func stats(forKey key: String) -> DestinationStats? {
        let s = stages.withLock { $0 }
        return (s.destinations.first { $0.destination.key == key } ?? s.retired.first { $0.destination.key == key })?.stats
    }

    // MARK: Events

    /// Runs an event through the client's timeline: source plugins on the caller's thread, then a
    /// copy to every enabled destination's queue, then the `after` plugins. Returns the event as it
    /// left enrichment (destinations' own changes are theirs alone), or nil if it was dropped.
    @discardableResult
    public func process(_ incoming: Event) -> Event? {
        PipelineThread.run { processMarked(incoming) }
    }

    private func processMarked(_ incoming: Event) -> Event? {
        let s = stages.withLock { $0 }
        guard let event = Timeline.apply(s.before, to: incoming),
              let enriched = Timeline.apply(s.enrichment, to: event) else { return nil }
        return distribute(enriched, s)
    }

    /// An event a plugin of this timeline took and lets through later (middleware answering
    /// after it returned): the rest of the timeline after that plugin, then the destinations.
    func processResumed(_ event: Event, after plugin: Plugin) {
        PipelineThread.run {
            let s = stages.withLock { $0 }
            switch Timeline.rest(after: plugin, in: s) {
            case .beforeDestinations(let plugins):
                guard let enriched = Timeline.apply(plugins, to: event) else { return }
                _ = distribute(enriched, s)
            case .afterDestinations(let plugins):
                _ = Timeline.apply(plugins, to: event)
            }
        }
    }

    /// A destination's own trip for an event resumed after `plugin` of this (the destination's)
    /// timeline; true when the destination saw it.
    func deliverResumed(_ event: Event, after plugin: Plugin, to destination: DestinationPlugin) -> Bool {
        let s = stages.withLock { $0 }
        switch Timeline.rest(after: plugin, in: s) {
        case .beforeDestinations(let plugins):
            guard let prepared = Timeline.apply(plugins, to: event) else { return false }
            guard let out = destination.execute(prepared) else { return true }
            _ = Timeline.apply(s.after, to: out)
            return true
        case .afterDestinations(let plugins):
            _ = Timeline.apply(plugins, to: event)
            return true
        }
    }

    private enum Rest { case beforeDestinations([Plugin]), afterDestinations([Plugin]) }

    /// What an event resumed after `plugin` still meets: the rest of its stage and the stages after.
    private static func rest(after plugin: Plugin, in s: Stages) -> Rest {
        if let i = s.before.firstIndex(where: { $0 === plugin }) {
            return .beforeDestinations(Array(s.before[(i + 1)...]) + s.enrichment)
        }
        if let i = s.enrichment.firstIndex(where: { $0 === plugin }) {
            return .beforeDestinations(Array(s.enrichment[(i + 1)...]))
        }
        if let i = s.after.firstIndex(where: { $0 === plugin }) {
            return .afterDestinations(Array(s.after[(i + 1)...]))
        }
        // Removed meanwhile: on as if it had been the last plugin of its stage.
        switch plugin.type {
        case .before: return .beforeDestinations(s.enrichment)
        case .after: return .afterDestinations([])
        default: return .beforeDestinations([])
        }
    }

    /// Fan-out of an event that left enrichment, then the `after` plugins.
    @inline(__always)
    private func distribute(_ event: Event, _ s: Stages) -> Event? {
        var enriched = event
        // The event as its text, for the destinations that take text alone.
        var encoded: EncodedEvent?
        if s.sharesText, enriched.shareEncodingHoldingPayload() { encoded = EncodedEvent(holding: enriched) }
        let options = enriched.integrations
        let planned = enriched.type == .track ? s.plan : nil
        let name = planned == nil ? "" : (enriched.event ?? "")
        let late = fanOut.withLock { () -> Bool in
            if closed.load(ordering: .relaxed) || (draining.load(ordering: .relaxed) && s.destinations.isEmpty) { return true }
            for (i, worker) in s.destinations.enumerated() {
                let key = worker.destination.key
                let wanted = s.enabled[i] && IntegrationsOption.isEnabled(key, in: options)
                    && (planned?.allows(event: name, destination: key) ?? true)
                    && !(worker.selective?.ignores(enriched.type) ?? false)
                // A worker stopping under a stale snapshot has left the timeline: as if skipped.
                let item: DestinationWorker.Item = if let encoded, worker.takesText { .encoded(encoded) } else { .event(enriched) }
                if !(wanted && worker.submit(item)) {
                    worker.stats._skipped.wrappingAdd(1, ordering: .relaxed)
                }
            }
            return false
        }
        if late {
            reportLate(enriched)
            return nil
        }
        return Timeline.apply(s.after, to: enriched)
    }

    /// Why an event offered now would not be delivered like any other, if so.
    enum Offer {
        /// It would be: taken.
        case accepted(Event?)
        /// This queue is full (take it later).
        case saturated(destination: String)
        /// The host is shutting down and could no longer deliver it.
        case stopping
        /// It could not be kept safe (the sent-back journal could not store it).
        case unstorable(reason: String, permanent: Bool)
    }

    /// For callers that must never wait (a library's `send_event`): `.stopping` once the host can
    /// no longer deliver, `.saturated` while some destination's queue is full, nil otherwise.
    /// Takes no lock the fan-out may hold: it is asked from inside the fan-out too.
    func refusal() -> Offer? {
        let s = stages.withLock { $0 }
        if closed.load(ordering: .acquiring) || (draining.load(ordering: .acquiring) && s.destinations.isEmpty) {
            return .stopping
        }
        for worker in s.destinations where !worker.hasRoom() { return .saturated(destination: worker.destination.key) }
        return nil
    }

    /// An event arrived after the last destinations began to stop: it cannot be delivered.
    private func reportLate(_ event: Event) {
        let report = state.withLock { $0.report }
        report(.delivery("\(event.type.rawValue) event \(event.messageId ?? "(no messageId)") arrived after shutdown; not delivered"))
    }

    /// Runs the plugins of one stage in order; nil as soon as one drops the event.
    @inline(__always)
    static func apply(_ plugins: [Plugin], to event: Event) -> Event? {
        var current = event
        for plugin in plugins {
            guard let next = plugin.execute(current) else { return nil }
            current = next
        }
        return current
    }

    /// Nothing in this timeline but destination filters (which only keep or drop): an event the
    /// destination itself ignores would have no effect here.
    var onlyFilters: Bool {
        stages.withLock { s in
            s.before.allSatisfy { $0 is KeepsOrDropsOnly } && s.enrichment.allSatisfy { $0 is KeepsOrDropsOnly }
                && s.after.allSatisfy { $0 is KeepsOrDropsOnly }
        }
    }

    /// A destination's own trip: its before and enrichment plugins, the destination, its after
    /// plugins. `reached` tells whether the destination itself saw the event.
    func deliver(_ event: Event, to destination: DestinationPlugin) -> (reached: Bool, result: Event?) {
        var plan = deliveryPlan()
        return deliver(event, to: destination, plan: &plan)
    }

    /// The plugins a destination's worker runs its events through, kept from event to event and
    /// taken again only when they changed (one atomic load per event instead of a lock). A plugin
    /// that passes every event as it is just now (a destination filter without rules) is left out.
    struct DeliveryPlan {
        fileprivate var version: Int
        fileprivate var before: [Plugin]
        fileprivate var enrichment: [Plugin]
        fileprivate var after: [Plugin]
        fileprivate var bare: Bool
        /// Nothing but the destination is in the timeline.
        var isBare: Bool { bare }
    }

    func deliveryPlan() -> DeliveryPlan {
        let (version, s) = stages.withLock { (stagesVersion.current, $0) }
        func working(_ plugins: [Plugin]) -> [Plugin] {
            plugins.filter { !(($0 as? PassesEverythingAtTimes)?.passesEverything ?? false) }
        }
        let before = working(s.before), enrichment = working(s.enrichment), after = working(s.after)
        return DeliveryPlan(version: version, before: before, enrichment: enrichment, after: after,
                            bare: before.isEmpty && enrichment.isEmpty && after.isEmpty)
    }

    @inline(__always)
    func deliver(_ event: Event, to destination: DestinationPlugin, plan: inout DeliveryPlan) -> (reached: Bool, result: Event?) {
        if stagesVersion.current != plan.version { plan = deliveryPlan() }
        if plan.bare {
            guard let out = destination.execute(event) else { return (true, nil) }
            return (true, out)
        }
        guard let prepared = Timeline.apply(plan.before, to: event).flatMap({ Timeline.apply(plan.enrichment, to: $0) }) else {
            return (false, nil)
        }
        guard let out = destination.execute(prepared) else { return (true, nil) }
        return (true, Timeline.apply(plan.after, to: out))
    }

    /// `deliver` for a worker that needs only whether the destination saw the event: a
    /// destination that takes text alone is lent it, with nothing handed back.
    @inline(__always)
    func deliverReaching(_ event: Event, to destination: DestinationPlugin, taker: TakesEncodedEvents?, plan: inout DeliveryPlan) -> Bool {
        if let taker, isBare(&plan) {
            taker.take(EncodedEvent(event))
            return true
        }
        return deliver(event, to: destination, plan: &plan).reached
    }

    /// The same for an event fan-out queued as text (the plan was bare then): read back into
    /// values only if the plan no longer is.
    @inline(__always)
    func deliverReaching(_ event: EncodedEvent, to destination: DestinationPlugin, taker: TakesEncodedEvents?,
                         plan: inout DeliveryPlan) -> Bool {
        if let taker, isBare(&plan) {
            taker.take(event)
            return true
        }
        return deliver(event.event, to: destination, plan: &plan).reached
    }

    /// Whether nothing but the destination is in this timeline now (the plan made again if stale).
    @inline(__always)
    func isBare(_ plan: inout DeliveryPlan) -> Bool {
        if stagesVersion.current != plan.version { plan = deliveryPlan() }
        return plan.bare
    }

    // MARK: Settings, reset, flush, shutdown

    /// Hands settings to every plugin; destinations get them on their own worker, in order with
    /// their events. Only destinations named in the settings' `integrations` map receive events.
    public func update(settings: Settings, type: UpdateType) {
        state.withLock { $0.settings = settings }
        let s = stages.withLock { current in
            let s = current.copy()
            s.enabledKeys = Set(settings.integrations.keys)
            s.switchedOffKeys = Set(settings.integrations.compactMap { $0.value == .bool(false) ? $0.key : nil })
            let plan = TrackingPlan(settings: settings)
            s.plan = plan.isEmpty ? nil : plan
            s.recomputeGates()
            current = s
            stagesVersion.bump()
            return s
        }
        for plugin in s.before + s.enrichment + s.after + s.utility { plugin.update(settings: settings, type: type) }
        for worker in s.destinations { worker.submit(.update(settings, type)) }
    }

    /// Resets every plugin; destinations reset on their own worker (their middleware may veto).
    public func reset() {
        let s = stages.withLock { $0 }
        for case let p as EventPlugin in s.before + s.enrichment + s.after + s.utility { p.reset() }
        for worker in s.destinations { worker.submit(.reset) }
    }

    /// Flushes every plugin and waits until every destination has drained its queue, at most
    /// `timeout` seconds. Returns false if some destination did not finish in time.
    @discardableResult
    public func flush(timeout: Double = 10) -> Bool {
        let s = stages.withLock { $0 }
        for case let p as EventPlugin in s.before + s.enrichment + s.after + s.utility { p.flush() }
        let group = DispatchGroup()
        // Workers first: an inline destination flushes on this thread, while they work on theirs.
        for worker in s.destinations.filter({ !$0.isInline }) + s.destinations.filter(\.isInline) {
            group.enter()
            worker.submit(.flush(group))
        }
        return group.wait(timeout: .now() + timeout) == .success
    }

    /// Flushes and stops every destination, producers before the destinations they feed, then
    /// shuts every other plugin down. Returns false if some destination did not finish in time.
    ///
    /// 1. Destinations other than Segment.io (loaded libraries may send events) flush and hear
    ///    STOPPING while every destination still runs.
    /// 2. They leave the timeline and stop in parallel (drain, flush, destroy); what they send
    ///    now goes to the destinations still running. Steps 1 and 2 have `hookTimeout` seconds
    ///    each: a destination not through one of them in time is abandoned (its undelivered
    ///    events counted and reported; never destroyed).
    /// 3. Segment.io flushes what everyone sent (at most `timeout`), the timeline closes (later
    ///    events are refused) and Segment.io stops (at most `timeout`).
    ///
    /// `settle` runs what producers sent so far through the pipeline: after step 1 (and the
    /// libraries that are not destinations, which stop then), and after step 2 (`final`).
    func shutdown(timeout: Double, hookTimeout: Double, settle: (_ final: Bool) -> Void = { _ in }) -> Bool {
        let s = stages.withLock { $0 }
        let deadline = monotonicSeconds() + hookTimeout
        let lastKey = RoutingRules.segmentDestinationKey
        let producers = s.destinations.filter { $0.destination.key != lastKey }
        let last = s.destinations.filter { $0.destination.key == lastKey }
        var ok = true

        for case let p as EventPlugin in s.before + s.enrichment + s.after + s.utility { p.flush() }
        let announced = producers.map { worker -> DispatchGroup in
            let group = DispatchGroup()
            group.enter()
            if !worker.submit(.flush(group)) { group.leave() }
            group.enter()
            if !worker.submit(.announceStopping(group)) { group.leave() }
            return group
        }
        // Those not through by the deadline are stuck (in a call, or far behind): abandoned
        // below; the others get a fresh `hookTimeout` to stop.
        let responsive = announced.map { $0.wait(timeout: .now() + max(0, deadline - monotonicSeconds())) == .success }
        // Producers that are not destinations stop now, while every destination still runs.
        for plugin in s.before + s.enrichment + s.after + s.utility where plugin is StopsWithProducers { plugin.shutdown() }
        settle(false)

        fanOut.withLock { draining.store(true, ordering: .releasing) }
        stages.withLock { current in
            let next = current.copy()
            next.destinations = last
            next.retired = producers
            next.encodedConsumers = last.filter { $0.destination is EncodedEventConsumer }.count
            next.recomputeGates()
            current = next
            stagesVersion.bump()
        }
        for (worker, answered) in zip(producers, responsive) where !answered {
            ok = false
            worker.abandon(after: hookTimeout)
        }
        for worker in producers { worker.beginStop() }
        let stopDeadline = monotonicSeconds() + hookTimeout
        for (worker, answered) in zip(producers, responsive) where answered && !worker.waitStopped(until: stopDeadline) {
            ok = false
            worker.abandon(after: hookTimeout)
        }

        settle(true)
        // Segment.io flushes what everyone sent, then stops.
        let lastFlushed = DispatchGroup()
        for worker in last {
            lastFlushed.enter()
            if !worker.submit(.flush(lastFlushed)) { lastFlushed.leave() }
        }
        if lastFlushed.wait(timeout: .now() + timeout) != .success { ok = false }
        fanOut.withLock { closed.store(true, ordering: .releasing) }
        let lastDeadline = monotonicSeconds() + timeout
        for worker in last { worker.beginStop() }
        for worker in last where !worker.waitStopped(until: lastDeadline) { ok = false }
        for plugin in s.before + s.enrichment + s.after + s.utility where !(plugin is StopsWithProducers) { plugin.shutdown() }
        return ok
    }

    // MARK: A destination's own timeline

    func attach(analytics: Analytics?, report: @escaping @Sendable (AnalyticsError) -> Void, capacity: Int) {
        state.withLock { $0.analytics = analytics; $0.report = report; $0.queueCapacity = capacity }
        if let analytics { for p in stages.withLock({ $0 }).all { p.configure(analytics: analytics) } }
    }

    func configureClient(_ analytics: Analytics, queueCapacity: Int, overflow: OverflowPolicy, hookTimeout: Double,
                         report: @escaping @Sendable (AnalyticsError) -> Void) {
        state.withLock {
            $0.analytics = analytics; $0.queueCapacity = queueCapacity; $0.overflow = overflow
            $0.hookTimeout = hookTimeout; $0.report = report
        }
    }

    /// Whether the plugins here let a reset or flush through (destination middleware can stop them).
    func allows(_ control: ControlCall) -> Bool {
        let s = stages.withLock { $0 }
        for case let gate as ControlGate in s.before + s.enrichment where !gate.allows(control) { return false }
        return true
    }

    func resetAll() { for case let p as EventPlugin in stages.withLock({ $0 }).all { p.reset() } }
    func flushAll() { for case let p as EventPlugin in stages.withLock({ $0 }).all { p.flush() } }
    func shutdownAll() { for p in stages.withLock({ $0 }).all { p.shutdown() } }
}

/// A destination that wants events as JSON text (loaded integrations, the upload queue): the client
/// encodes each event once before fan-out and every unchanged copy shares that text.
package protocol EncodedEventConsumer: DestinationPlugin {}

/// Reset and flush travel through middleware too.
package enum ControlCall: Sendable { case reset, flush }

/// A plugin that may stop a reset or flush from reaching what comes after it.
protocol ControlGate {
    func allows(_ control: ControlCall) -> Bool
}
