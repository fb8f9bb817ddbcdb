import Foundation

/// A loaded integration instance as a destination of the client: it has its own timeline (filters,
/// destination middleware) and its own worker like any Swift destination, receives each event as
/// the JSON text the client encoded once before fan-out, retries retryable hook failures with
/// bounded backoff and reports permanent ones (and exhausted retries) to the error handler.
///
/// Every hook runs on the destination's worker, which is what the ABI's per-instance
/// serialization rule asks for. The library hears `started` before its first call there, and
/// `stopping`, `flush`, `destroy` when the worker shuts down.
package final class NativeDestination: DestinationPlugin, ApplicationLifecycle, EncodedEventConsumer, StopAnnouncing, AbandonableDestination,
    WholeSettingsDestination, EventTypeSelective, SettlesLater, DeliversInRuns, DurablyQueued, FinishesEventsLater, TakesEncodedEvents, @unchecked Sendable {
    package let key: String
    package let timeline = Timeline()
    package let integration: NativeIntegration
    package let retryPolicy: NativeRetryPolicy
    /// `AH_ROLE_WHOLE_SETTINGS`: `update` receives the whole settings document, and only
    /// `integrations[key] == false` keeps events away.
    package let wholeSettings: Bool

    /// Set once by `configure` (on the thread adding the destination), read on failures only.
    let client = Locked(Client())
    struct Client {
        var analytics = WeakAnalytics()
        var stats: DestinationStats?
    }
    /// Touched on the worker only, like every `var` below: `@exclusivity(unchecked)` spares each
    /// event the runtime's access bookkeeping (a loaded destination reads or writes several of them
    /// per event; the compiler still checks what it can see).
    @exclusivity(unchecked) private var started = false
    @exclusivity(unchecked) private var announcedStopping = false
    /// Whether a hook other than `flush` ran since the last successful flush (shutdown then
    /// flushes once more; otherwise the flush before STOPPING was the last word).
    @exclusivity(unchecked) private var unflushed = false
    /// The shutdown step in progress, for the report if it never returns.
    private let step = Locked<String?>(nil)
    /// Events whose hook answered pending (ABI 1.3), by token. Touched on the worker only.
    @exclusivity(unchecked) var parked: [UInt64: ParkedEvent] = [:]
    /// How long a call may stay pending (the client's hook timeout, set by `configure`).
    @exclusivity(unchecked) var hookTimeout = 10.0
    /// Events waiting for the library's batch hook (ABI 1.3 `AH_EXT_BATCH`), with their tickets
    /// when they come from a durable queue. Worker only.
    @exclusivity(unchecked) var run = BatchRun()
    @exclusivity(unchecked) var runTickets: [UInt64?] = []
    /// Whether its events wait on disk until finished (ABI 1.3 `AH_EXT_DURABLE`, or its settings).
    let durability: NativeDurability?
    /// The tickets of a durable queue's events (set by the worker before the first event).
    var completions: EventCompletions?

    package init(integration: NativeIntegration, retryPolicy: NativeRetryPolicy = NativeRetryPolicy(),
                durability: NativeDurability? = nil) {
        self.key = integration.key
        self.integration = integration
        self.retryPolicy = retryPolicy
        self.wholeSettings = integration.library.info.wantsWholeSettings
        self.durability = durability
    }

    func finishEvents(through completions: EventCompletions) { self.completions = completions }

    package func configure(analytics: Analytics) {
        let stats = analytics.timeline.stats(forKey: key)
        client.withLock { $0 = Client(analytics: WeakAnalytics(analytics), stats: stats) }
        hookTimeout = analytics.configuration.hookTimeout
        let weak = WeakAnalytics(analytics), key = key
        integration.pendingCalls.onArrival { weak.value?.timeline.worker(forKey: key)?.submit(.settle) }
    }

    /// The library has no hook for this kind of event and nothing in this destination's own
    /// timeline but its filters could see it: fan-out counts it as skipped instead of queueing a call that would
    /// do nothing (an integration declares its hooks; a NULL hook is a no-op by the ABI).
    func ignores(_ type: EventType) -> Bool {
        !integration.library.info.handles(type) && timeline.onlyFilters
    }

    var receivesWholeSettings: Bool { wholeSettings }

    package func execute(_ event: Event) -> Event? { handle(EncodedEvent(event)) ? event : nil }

    func take(_ event: EncodedEvent) { _ = handle(event) }

    /// Whether the library took the event (or holds it to answer later).
    @inline(__always)
    private func handle(_ event: EncodedEvent) -> Bool {
        startIfNeeded()
        unflushed = true
        if let size = integration.batchSize {
            gather(event, upTo: size)
            return true
        }
        // A library that may finish later (it looked up AH_EXT_FINISH_LATER) takes the longer road.
        if integration.pendingCalls.isUsed { return executeAllowingPending(event) }
        return perform(event.type.rawValue, countsAsEvent: true) { integration.deliver(event) }
    }

    package func update(settings: Settings, type: UpdateType) {
        startIfNeeded()
        unflushed = true
        deliverRun()
        let own = wholeSettings ? settings.json : settings.integrationSettings(forKey: key) ?? [:]
        _ = perform("update", countsAsEvent: false) { integration.update(settings: own, kind: type == .initial ? .initial : .refresh) }
    }

    package func reset() {
        startIfNeeded()
        unflushed = true
        deliverRun()
        _ = perform("reset", countsAsEvent: false) { integration.reset() }
    }

    package func flush() {
        startIfNeeded()
        deliverRun()
        let flushed = perform("flush", countsAsEvent: false, { integration.flush() })
        // A flush ends when what the library holds has its answer (within the hook timeout).
        if !parked.isEmpty { settlePending(until: monotonicSeconds() + pendingWaitBudget) }
        if flushed && parked.isEmpty { unflushed = false }
    }

    /// An application event (on the worker, like every hook); failures are reported, not retried.
    package func application(_ event: ApplicationEvent) {
        startIfNeeded()
        deliverRun()
        switch integration.application(event) {
        case .ok: break
        case .retryable(let text), .permanent(let text):
            client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: "application_event(\(event.name)) failed (not retried): \(text)"))
        }
    }

    /// Shutdown's first step, while every destination still runs (events sent now reach them all).
    func announceStopping() {
        guard started, !announcedStopping else { return }
        announcedStopping = true
        deliverRun()
        _ = perform("lifecycle(stopping)", countsAsEvent: false) { integration.lifecycle(.stopping) }
    }

    /// The worker is stopping: announce it (unless shutdown already did), flush (unless nothing
    /// reached the instance since its last flush), then end the instance.
    package func shutdown() {
        step.withLock { $0 = "lifecycle(stopping)" }
        announceStopping()
        if unflushed || !started {
            step.withLock { $0 = "flush" }
            _ = perform("flush", countsAsEvent: false) { integration.flush() }
        }
        deliverRun()
        if integration.pendingCalls.isUsed { settleArrived() }
        if !parked.isEmpty {
            step.withLock { $0 = "waiting for calls that finish later" }
            settlePending(until: monotonicSeconds() + pendingWaitBudget)
            abandonParked(reason: completions == nil ? "no answer before the instance ended"
                : "no answer before the instance ended (kept on disk: the next run hands them over again)")
        }
        step.withLock { $0 = "destroy" }
        integration.destroy()
        step.withLock { $0 = nil }
    }

    func abandon() -> String {
        integration.abandon()
        return "library \(integration.library.file)"
    }

    func callName(for type: EventType) -> String { type == .page ? "screen" : type.rawValue }

    var stoppingStep: String? { step.withLock { $0 } }

    private func startIfNeeded() {
        guard !started else { return }
        started = true
        _ = perform("lifecycle(started)", countsAsEvent: false) { integration.lifecycle(.started) }
    }

    /// Calls a hook, retrying retryable failures per the policy. Returns whether it succeeded;
    /// failures are reported (and, for events, counted as failed in the destination's stats).
    @inline(__always)
    private func perform(_ what: String, countsAsEvent: Bool, _ call: () -> NativeHookResult) -> Bool {
        var result = call()
        if result.isOK { return true }
        var attempt = 1
        while case .retryable = result, attempt < retryPolicy.maxAttempts {
            Thread.sleep(forTimeInterval: retryPolicy.delay(afterAttempt: attempt, hint: integration.retryHint))
            attempt += 1
            result = call()
        }
        return reportFailure(what, result, attempts: attempt, countsAsEvent: countsAsEvent)
    }

    /// Reports a failed call (and counts it for events); false, or true for `.ok`.
    func reportFailure(_ what: String, _ result: NativeHookResult, attempts attempt: Int, countsAsEvent: Bool) -> Bool {
        let message: String
        switch result {
        case .ok: return true
        case .retryable(let text): message = "\(what) failed after \(attempt) attempt\(attempt == 1 ? "" : "s"): \(text)"
        case .permanent(let text): message = "\(what) failed: \(text)"
        }
        guard integration.isCallable else { return false }  // abandoned meanwhile: counted as such
        let (analytics, stats) = client.withLock { ($0.analytics.value, $0.stats) }
        if countsAsEvent { stats?.recordFailure() }
        analytics?.report(.plugin(name: key, message: message))
        return false
    }
}

/// How a native destination retries a hook that reported a retryable failure: a few attempts with
/// exponential backoff, bounded so that one struggling library holds its own queue for seconds at
/// most (it has its own worker, so nobody else waits). Then the failure is reported.
package struct NativeRetryPolicy: Sendable, Equatable {
    /// Calls in all, the first one included (at least 1).
    package var maxAttempts: Int
    /// Wait before the second attempt, in seconds; doubled for each further one.
    package var initialDelay: Double
    /// Longest single wait of the backoff, in seconds.
    package var maxDelay: Double
    /// Longest wait a library's Retry-After (`AH_EXT_RETRY_AFTER`) may ask for, in seconds.
    package var maxHintedDelay: Double

    package init(maxAttempts: Int = 4, initialDelay: Double = 0.1, maxDelay: Double = 2, maxHintedDelay: Double = 30) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = max(0, initialDelay)
        self.maxDelay = max(0, maxDelay)
        self.maxHintedDelay = max(0, maxHintedDelay)
    }

    /// The wait after failed attempt `attempt` (1-based).
    package func delay(afterAttempt attempt: Int) -> Double {
        var delay = initialDelay
        for _ in 1..<max(1, attempt) where delay < maxDelay { delay *= 2 }
        return min(delay, maxDelay)
    }
}
