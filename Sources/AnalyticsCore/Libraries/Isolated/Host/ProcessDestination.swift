import CAnalyticsABI
import Foundation
import Glibc

/// A loaded library's destination whose code runs in an `analytics-plugin-runner` child process.
/// To the timeline it is a destination like any other (own worker, own timeline, filters, stats):
/// the worker hands it events in order, it queues them, and its pump thread sends them to the
/// child in batches and reads the results back in batches.
///
/// Failures of the child: it crashed or exited (end of its socket, then its wait status), or it
/// did not answer within `hookTimeout` seconds of its last result (then it is SIGKILLed). Either
/// way it is reported with the library, the status or signal and the item being processed; the
/// items in flight are sent again to a new child, started after a backoff (at-least-once: the
/// library may have seen some of them), and the one being processed is counted failed once it
/// has been tried `maxAttempts` times. After `maxCrashes` crashes within `crashWindow` the
/// destination is disabled and reported: its events are counted failed, nothing else stops.
///
/// Accounting, as for every destination: the worker counts an event delivered (handed over) when
/// it is queued here; one that fails later is counted failed as well (the summary's delivered
/// column is delivered − failed).
package final class ProcessDestination: DestinationPlugin, ApplicationLifecycle, StopAnnouncing, WholeSettingsDestination,
    EventTypeSelective, DurablyQueued, FinishesEventsLater, TakesEncodedEvents, @unchecked Sendable {
    package let key: String
    package let timeline = Timeline()
    package let info: NativeLibraryInfo

    let runner: String
    let limits: IsolationConfiguration
    let retryPolicy: NativeRetryPolicy
    let startPayload: [UInt8]
    let wholeSettings: Bool

    let client = Locked(Client())
    struct Client {
        var analytics = WeakAnalytics()
        var stats: DestinationStats?
        var services: HostServices?
        var hookTimeout = 10.0
    }

    /// One thing to call on the instance.
    final class Item: @unchecked Sendable {
        let op: IsolationWire.Op
        let bytes: [UInt8]
        let event: EncodedEvent?
        var attempts = 0
        /// Its ticket in a durable queue (finished when its answer is final).
        var ticket: UInt64?
        /// Times the library's process died or hung while calling this very item.
        var crashes = 0
        /// Signalled once the item is done (answered, or given up).
        let done: DispatchSemaphore?
        /// Replayed to a restarted child (its initial update, lifecycle(started)): not counted.
        let replay: Bool

        init(op: IsolationWire.Op, bytes: [UInt8] = [], event: EncodedEvent? = nil, waits: Bool = false, replay: Bool = false) {
            self.op = op
            self.bytes = bytes
            self.event = event
            self.done = waits ? DispatchSemaphore(value: 0) : nil
            self.replay = replay
        }

        /// The hook's name in reports; an application event's says which (read back from its
        /// JSON: only a failure or a crash needs it).
        var callName: String {
            guard op == .application else { return op.hookName }
            let name = (try? JSON(parsing: Array(bytes.dropFirst(4))))?["name"]?.stringValue ?? "?"
            return "application_event(\(name))"
        }

        /// "processing track \"Order\" event m-1" / "calling flush".
        var label: String {
            guard let event = event?.event else { return "calling \(callName)" }
            let name = event.event ?? event.name
            return "processing \(event.type.rawValue)" + (name.map { " \"\($0)\"" } ?? "")
                + " event \(event.messageId ?? "(no messageId)")"
        }
    }

    // Guarded by `condition`.
    let condition = NSCondition()
    var outbox: [Item] = []
    var outboxHead = 0
    var stopping = false
    var disabled: String?
    var pumpFinished = false
    var incoming: [(UInt8, String)] = []
    var childGone = false
    var waitingForRoom = 0

    /// The child in use, for `shutdown` to kill (guarded by `condition`).
    var currentChild: IsolatedProcess?
    // Touched on the worker only.
    var started = false
    var announcedStopping = false
    var unflushed = false
    // Touched on the pump only.
    var child: IsolatedProcess?
    var lastInitialSettings: [UInt8]?
    var crashTimes: [Double] = []
    var crashesInARow = 0
    var everStarted = false
    let progress = ProgressPage()
    var batchSequence: UInt64 = 0
    /// The library's pids cgroup (every runner of it joins the same one), once made.
    var pidsCgroup: RunnerPidsCgroup?
    var pidsCgroupTried = false
    /// The library's memory cgroup (every runner of it joins the same one), once made.
    var cgroup: IsolatedCgroup?
    var cgroupTried = false
    /// The outcome of the start made in `init`, when it failed (handled by the pump).
    var pendingStart: StartOutcome?
    /// The timeline plugins and the signal forwarding of the current process (guarded by `condition`).
    var plugins: IsolatedPlugins?
    var signals: IsolatedSignals?
    /// Empty results frames: the runner is waiting to retry an item (guarded by `condition`).
    var heartbeats = 0
    /// Items sent to the current process and not answered yet: a results frame may answer no
    /// more (guarded by `condition`).
    var awaitingResults = 0
    /// Pending results the current process gave (the serials it may name in `completed` frames
    /// are below this plus `awaitingResults`), and those not settled yet: a `settled` frame may
    /// settle no more (guarded by `condition`, kept by the reader).
    var pendingAnnounced: UInt64 = 0
    var unsettled = 0
    /// Why the reader ended the current process: the frame it sent that the host refused
    /// (guarded by `condition`, taken by the crash report).
    var protocolError: String?
    /// Settings of the latest update (the worker writes, the pump reads for a restart).
    let latestSettings = Locked<[UInt8]?>(nil)

    /// What the library's settings grant it beyond the jail.
    let grants: JailGrants
    /// The directory the library may write (its storage directory, made before each start).
    let ownDirectory: String
    /// System calls of the library its jail refused, reported already (pump only).
    var refusalsReported: Set<Int> = []

    var pump: Thread?
    let pumpDone = DispatchSemaphore(value: 0)
    /// AH_EXT_HTTP_REQUESTS calls of the runner, made here with the host's HTTP client.
    let httpRelay: HTTPRequestRelay

    /// Whether its events wait on disk until finished (ABI 1.3 `AH_EXT_DURABLE`, or its settings).
    let durability: NativeDurability?
    /// The tickets of a durable queue's events (set by the worker before the first event).
    let completions = Locked<EventCompletions?>(nil)
    /// Pending calls of the current process (guarded by `condition`): the serial the next
    /// `pending` result gets, the ticketed items waiting for their answer by serial, answers
    /// that came before their `pending` result, and (after a crash) the items that were waiting.
    var nextSerial: UInt64 = 0
    var awaitingAnswers: [UInt64: Item] = [:]
    var answeredEarly: Set<UInt64> = []
    var stranded: [Item] = []
    /// Stopped at its deadline, a durable destination leaves what it held on disk, neither
    /// finished nor failed (guarded by `condition`).
    var keepsHeldOnDisk = false

    init(info: NativeLibraryInfo, runner: String, settings: JSONObject, analytics: Analytics) {
        self.key = info.key
        self.info = info
        self.runner = runner
        self.limits = analytics.configuration.isolation
        self.retryPolicy = analytics.configuration.libraryRetryPolicy
        self.wholeSettings = info.wantsWholeSettings
        self.durability = NativeDurability.resolve(settings: settings, library: info.durable)
        self.grants = JailGrants(settings: settings, key: info.key).merged(with: analytics.configuration.isolation.grants[info.key])
        httpRelay = HTTPRequestRelay(policy: grants.httpPolicy(settings: settings, maxResponseBytes: analytics.configuration.isolation.maxHTTPResponseBytes))
        let directory = analytics.configuration.storageDirectory + "/plugins/" + HostServices.Client.directoryName(for: info.key)
        ownDirectory = directory
        var start: JSONObject = ["settings": .object(settings), "storageDirectory": .string(directory)]
        start["options"] = .object(analytics.configuration.pluginOptions[info.key] ?? [:])
        if let signals = analytics.signals {
            start["signals"] = ["maximumBufferSize": .number(Double(signals.currentConfiguration.maximumBufferSize))]
        }
        start["hookTimeout"] = .number(JSONNumber(analytics.configuration.hookTimeout))
        // A durable destination's calls past the hook timeout are called again, not abandoned.
        if durability != nil { start["durable"] = true }
        let keeps = NativeLogLevel.threshold(of: analytics.configuration)
        start["logThreshold"] = .number(JSONNumber(Int(([NativeLogLevel.debug, .info, .warn, .error].first(where: keeps) ?? .error).rawValue)))
        start["retry"] = ["maxAttempts": .number(Double(retryPolicy.maxAttempts)), "initialDelay": .number(retryPolicy.initialDelay),
                          "maxDelay": .number(retryPolicy.maxDelay), "maxHintedDelay": .number(retryPolicy.maxHintedDelay)]
        startPayload = JSON.object(start).serializedBytes()
        client.withLock {
            $0.services = .forwarding(to: analytics, key: info.key)
            $0.hookTimeout = analytics.configuration.hookTimeout
            $0.analytics = WeakAnalytics(analytics)
        }
        for problem in grants.problems { analytics.report(.plugin(name: info.key, message: problem + " (granted nothing)")) }
        // A root host's runner is another user: what it is granted must be within that user's reach.
        let user = analytics.configuration.isolation.runnerUser
        let unreachable = grants.files.compactMap { path in user.problem(reaching: path, write: true).map { "files:\(path): \($0)" } }
            + grants.read.compactMap { path in user.problem(reaching: path).map { "read:\(path): \($0)" } }
        for problem in unreachable { analytics.report(.plugin(name: info.key, message: "isolation.allow " + problem)) }
        // The first process starts now, as an in-process library is created now: the timeline
        // plugins its `create` adds are in place before the client's first event. A failure is
        // handled when the first item needs the process (restart with backoff, or disabled).
        if case let outcome = startChild(timeout: analytics.configuration.hookTimeout), !outcome.isStarted { pendingStart = outcome }
        let thread = Thread { [self] in runPump() }
        thread.name = "isolated \(info.key)"
        pump = thread
        thread.start()
    }

    package func configure(analytics: Analytics) {
        let stats = analytics.timeline.stats(forKey: key)
        client.withLock { $0.analytics = WeakAnalytics(analytics); $0.stats = stats }
    }

    /// Whether the library was disabled after crashing too often (and why).
    package var disabledReason: String? {
        condition.lock()
        defer { condition.unlock() }
        return disabled
    }

    // MARK: Worker side

    package func execute(_ event: Event) -> Event? {
        take(EncodedEvent(event))
        return event
    }

    func take(_ event: EncodedEvent) {
        startIfNeeded()
        unflushed = true
        let item = Item(op: IsolationWire.Op(event.type), event: event)
        item.ticket = completions.withLock { $0 }?.take()
        enqueue(item)
    }

    func finishEvents(through completions: EventCompletions) { self.completions.withLock { $0 = completions } }

    package func update(settings: Settings, type: UpdateType) {
        startIfNeeded()
        unflushed = true
        let own = (wholeSettings ? settings.json : settings.integrationSettings(forKey: key) ?? [:]).serializedBytes()
        latestSettings.withLock { $0 = own }
        enqueue(Item(op: type == .initial ? .updateInitial : .updateRefresh, bytes: own))
    }

    package func reset() {
        startIfNeeded()
        unflushed = true
        enqueue(Item(op: .reset))
    }

    /// Waits until the child flushed (or the flush was given up): a flush of the client covers
    /// every event queued here before it.
    package func flush() {
        startIfNeeded()
        let item = Item(op: .flush, waits: true)
        enqueue(item)
        item.done?.wait()
        unflushed = false
    }

    /// An application event, in the ordered stream with everything the worker handed over before
    /// it, one-way as in-process. Only to a library that offers AH_EXT_APPLICATION (its info,
    /// from the runner's load, says so): no round trip for one that would ignore it.
    package func application(_ event: ApplicationEvent) {
        startIfNeeded()
        guard info.hooks.contains(.application) else { return }
        enqueue(Item(op: .application, bytes: IsolationWire.applicationItem(event)))
    }

    /// As in-process (`NativeDestination.ignores`): a type without its hook, and nothing but
    /// filters in this destination's timeline, is skipped at fan-out, not sent to the runner.
    func ignores(_ type: EventType) -> Bool { !info.handles(type) && timeline.onlyFilters }

    var receivesWholeSettings: Bool { wholeSettings }

    func announceStopping() {
        guard started, !announcedStopping else { return }
        announcedStopping = true
        let item = Item(op: .lifecycleStopping, waits: true)
        enqueue(item)
        item.done?.wait()
    }

    /// Stopping, flush, destroy; then the child ends. A destination is not flushed again when
    /// nothing reached it since its last flush (as `NativeDestination`); a library that is not a
    /// destination always is (`alwaysFlush`, as `NativeUtilityLibrary`).
    /// Bounded by `hookTimeout`: a child still busy then is killed and what it held counted failed.
    package func shutdown() { shutdown(alwaysFlush: false) }

    func shutdown(alwaysFlush: Bool) {
        announceStopping()
        if alwaysFlush || unflushed || !started { enqueue(Item(op: .flush)) }
        enqueue(Item(op: .destroy))
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        // Within the timeline's own bound for a stopping destination (hookTimeout), so this
        // destination ends itself (and counts what it held) before the timeline gives up on it.
        let timeout = client.withLock { $0.hookTimeout } * 0.9
        if pumpDone.wait(timeout: .now() + timeout) == .timedOut {
            // A durable destination's events are on disk until finished: what it held stays
            // there for the next run (counted queued), whatever the library sent back meanwhile.
            let held = durability != nil ? "what it held stays on disk for the next run (counted queued)" : "what it held is counted failed"
            condition.lock()
            keepsHeldOnDisk = durability != nil
            condition.unlock()
            disable("did not stop within \(String(format: "%.1f", timeout)) s; its process was killed and \(held)")
            condition.lock()
            let c = currentChild
            condition.unlock()
            c?.kill()
            pumpDone.wait()
        }
        pumpDone.signal()
    }

    func startIfNeeded() {
        guard !started else { return }
        started = true
        enqueue(Item(op: .lifecycleStarted))
    }

    /// Most items waiting here before the worker itself waits (its producers then wait too).
    var capacity: Int { max(1, limits.batchSize) * 4 }

    func enqueue(_ item: Item) {
        condition.lock()
        if disabled != nil {
            condition.unlock()
            giveUp(item, counted: true)
            return
        }
        while outbox.count - outboxHead >= capacity && disabled == nil && !pumpFinished {
            waitingForRoom += 1
            condition.wait()
            waitingForRoom -= 1
        }
        if disabled != nil || pumpFinished {
            condition.unlock()
            giveUp(item, counted: true)
            return
        }
        let wasEmpty = outbox.count == outboxHead
        outbox.append(item)
        if wasEmpty { condition.broadcast() }
        condition.unlock()
    }

}
