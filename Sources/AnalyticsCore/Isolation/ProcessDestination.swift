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
public final class ProcessDestination: DestinationPlugin, ApplicationLifecycle, StopAnnouncing, @unchecked Sendable {
    public let key: String
    public let timeline = Timeline()
    public let info: NativeLibraryInfo

    private let runner: String
    private let limits: IsolationConfiguration
    private let retryPolicy: NativeRetryPolicy
    private let startPayload: [UInt8]
    private let wholeSettings: Bool

    private let client = Locked(Client())
    private struct Client {
        var analytics = WeakAnalytics()
        var stats: DestinationStats?
        var services: HostServices?
        var hookTimeout = 10.0
    }

    /// One thing to call on the instance.
    final class Item: @unchecked Sendable {
        let op: IsolationWire.Op
        let bytes: [UInt8]
        let event: Event?
        var attempts = 0
        /// Times the library's process died or hung while calling this very item.
        var crashes = 0
        /// Signalled once the item is done (answered, or given up).
        let done: DispatchSemaphore?
        /// Replayed to a restarted child (its initial update, lifecycle(started)): not counted.
        let replay: Bool

        init(op: IsolationWire.Op, bytes: [UInt8] = [], event: Event? = nil, waits: Bool = false, replay: Bool = false) {
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
            guard let event else { return "calling \(callName)" }
            let name = event.event ?? event.name
            return "processing \(event.type.rawValue)" + (name.map { " \"\($0)\"" } ?? "")
                + " event \(event.messageId ?? "(no messageId)")"
        }
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var outbox: [Item] = []
    private var outboxHead = 0
    private var stopping = false
    private var disabled: String?
    private var pumpFinished = false
    private var incoming: [(UInt8, String)] = []
    private var childGone = false
    private var waitingForRoom = 0

    // Touched on the worker only.
    private var started = false
    private var announcedStopping = false
    private var unflushed = false
    // Touched on the pump only.
    private var child: RunnerProcess?
    private var lastInitialSettings: [UInt8]?
    private var crashTimes: [Double] = []
    private var crashesInARow = 0
    private var everStarted = false
    private let progress = ProgressPage()
    private var batchSequence: UInt64 = 0
    /// The library's memory cgroup (every runner of it joins the same one), once made.
    private var cgroup: RunnerCgroup?
    private var cgroupTried = false
    /// The outcome of the start made in `init`, when it failed (handled by the pump).
    private var pendingStart: StartOutcome?
    /// The timeline plugins and the signal forwarding of the current process (guarded by `condition`).
    private var plugins: IsolatedPlugins?
    private var signals: IsolatedSignals?
    /// Empty results frames: the runner is waiting to retry an item (guarded by `condition`).
    private var heartbeats = 0
    /// Settings of the latest update (the worker writes, the pump reads for a restart).
    private let latestSettings = Locked<[UInt8]?>(nil)

    private var pump: Thread?
    private let pumpDone = DispatchSemaphore(value: 0)
    /// AH_EXT_HTTP_REQUESTS calls of the runner, made here with the host's HTTP client.
    private let httpRelay = HTTPRequestRelay()

    init(info: NativeLibraryInfo, runner: String, settings: JSONObject, analytics: Analytics) {
        self.key = info.key
        self.info = info
        self.runner = runner
        self.limits = analytics.configuration.isolation
        self.retryPolicy = NativeRetryPolicy()
        self.wholeSettings = info.wantsWholeSettings
        let directory = analytics.configuration.storageDirectory + "/plugins/" + NativeClientServices.directoryName(for: info.key)
        var start: JSONObject = ["settings": .object(settings), "storageDirectory": .string(directory)]
        start["options"] = .object(analytics.configuration.pluginOptions[info.key] ?? [:])
        if let signals = analytics.signals {
            start["signals"] = ["maximumBufferSize": .number(Double(signals.currentConfiguration.maximumBufferSize))]
        }
        start["retry"] = ["maxAttempts": .number(Double(retryPolicy.maxAttempts)), "initialDelay": .number(retryPolicy.initialDelay),
                          "maxDelay": .number(retryPolicy.maxDelay)]
        startPayload = JSON.object(start).serializedBytes()
        client.withLock {
            $0.services = .forwarding(to: analytics, key: info.key)
            $0.hookTimeout = analytics.configuration.hookTimeout
            $0.analytics = WeakAnalytics(analytics)
        }
        // The first process starts now, as an in-process library is created now: the timeline
        // plugins its `create` adds are in place before the client's first event. A failure is
        // handled when the first item needs the process (restart with backoff, or disabled).
        if case let outcome = startChild(timeout: analytics.configuration.hookTimeout), !outcome.isStarted { pendingStart = outcome }
        let thread = Thread { [self] in runPump() }
        thread.name = "isolated \(info.key)"
        pump = thread
        thread.start()
    }

    public func configure(analytics: Analytics) {
        let stats = analytics.timeline.stats(forKey: key)
        client.withLock { $0.analytics = WeakAnalytics(analytics); $0.stats = stats }
    }

    /// Whether the library was disabled after crashing too often (and why).
    public var disabledReason: String? {
        condition.lock()
        defer { condition.unlock() }
        return disabled
    }

    // MARK: Worker side

    public func execute(_ event: Event) -> Event? {
        startIfNeeded()
        unflushed = true
        enqueue(Item(op: IsolationWire.Op(event.type), bytes: event.serializedBytes, event: event))
        return event
    }

    public func update(settings: Settings, type: UpdateType) {
        startIfNeeded()
        unflushed = true
        let own = (wholeSettings ? settings.json : settings.integrationSettings(forKey: key) ?? [:]).serializedBytes()
        latestSettings.withLock { $0 = own }
        enqueue(Item(op: type == .initial ? .updateInitial : .updateRefresh, bytes: own))
    }

    public func reset() {
        startIfNeeded()
        unflushed = true
        enqueue(Item(op: .reset))
    }

    /// Waits until the child flushed (or the flush was given up): a flush of the client covers
    /// every event queued here before it.
    public func flush() {
        startIfNeeded()
        let item = Item(op: .flush, waits: true)
        enqueue(item)
        item.done?.wait()
        unflushed = false
    }

    /// An application event, in the ordered stream with everything the worker handed over before
    /// it, one-way as in-process. Only to a library that offers AH_EXT_APPLICATION (its info,
    /// from the runner's load, says so): no round trip for one that would ignore it.
    public func application(_ event: ApplicationEvent) {
        startIfNeeded()
        guard info.hooks.contains(.application) else { return }
        enqueue(Item(op: .application, bytes: IsolationWire.applicationItem(event)))
    }

    func announceStopping() {
        guard started, !announcedStopping else { return }
        announcedStopping = true
        let item = Item(op: .lifecycleStopping, waits: true)
        enqueue(item)
        item.done?.wait()
    }

    /// Stopping, flush, destroy; then the child ends. A destination is not flushed again when
    /// nothing reached it since its last flush (as `NativeDestination`); a library that is not a
    /// destination always is (`alwaysFlush`, as `NativeExtension`).
    /// Bounded by `hookTimeout`: a child still busy then is killed and what it held counted failed.
    public func shutdown() { shutdown(alwaysFlush: false) }

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
            disable("did not stop within \(String(format: "%.1f", timeout)) s; its process was killed and what it held is counted failed")
            condition.lock()
            let c = currentChild
            condition.unlock()
            c?.kill()
            pumpDone.wait()
        }
        pumpDone.signal()
    }

    private func startIfNeeded() {
        guard !started else { return }
        started = true
        enqueue(Item(op: .lifecycleStarted))
    }

    /// Most items waiting here before the worker itself waits (its producers then wait too).
    private var capacity: Int { max(1, limits.batchSize) * 4 }

    private func enqueue(_ item: Item) {
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

    // MARK: Pump

    /// The child in use, for `shutdown` to kill (guarded by `condition`).
    private var currentChild: RunnerProcess?

    private func runPump() {
        var batch: [Item] = []
        while true {
            condition.lock()
            while outbox.count == outboxHead && !stopping && !(childGone && child != nil) { condition.wait() }
            if outbox.count == outboxHead && stopping { condition.unlock(); break }
            if outbox.count == outboxHead {
                // The process ended between batches (a timeline plugin crashed it, or one was
                // killed at its deadline): reported, and restarted now, so that its plugins
                // are back on the timeline without waiting for the next item.
                condition.unlock()
                let timeout = client.withLock { $0.hookTimeout }
                finishCrash(batch: [], answered: 0, sequence: batchSequence, timedOut: false, timeout: timeout)
                while child == nil && disabledReason == nil && !isStopping() { run([]) }
                continue
            }
            let take = min(max(1, min(limits.batchSize, ProgressPage.maxItems)), outbox.count - outboxHead)
            batch = Array(outbox[outboxHead..<(outboxHead + take)])
            outboxHead += take
            if outboxHead > 4096 && outboxHead * 2 > outbox.count {
                outbox.removeFirst(outboxHead)
                outboxHead = 0
            }
            if waitingForRoom > 0 { condition.broadcast() }
            let isDisabled = disabled != nil
            condition.unlock()
            if isDisabled {
                for item in batch { giveUp(item, counted: true) }
                continue
            }
            run(batch)
            // After `destroy` the child is done.
            if batch.last?.op == .destroy && child != nil { endChild() }
        }
        endChild()
        cgroup?.remove()
        condition.lock()
        pumpFinished = true
        condition.broadcast()
        condition.unlock()
        pumpDone.signal()
    }

    /// Sends one batch and reads its results; on a crash or hang, handles it and puts what was
    /// in flight back at the front of the queue.
    private func run(_ items: [Item]) {
        let timeout = client.withLock { $0.hookTimeout }
        var batch = items
        if child == nil {
            let outcome = pendingStart ?? startChild(timeout: timeout)
            pendingStart = nil
            switch outcome {
            case .started(let replay): batch = replay + batch
            case .failed(let status, let during):
                crashed(status: status, during: during, culprit: nil, inFlight: [], requeue: items, timedOut: false, timeout: timeout)
                return
            case .refused(let why):
                disable(why)
                for item in items { giveUp(item, counted: true) }
                return
            }
        }
        guard let child else { return }
        var w = WireWriter()
        batchSequence &+= 1
        let sequence = batchSequence
        w.begin(.batch)
        w.u32(UInt32(batch.count))
        w.i64(Int64(bitPattern: sequence))
        for item in batch {
            w.u8(item.op.rawValue)
            w.data(item.bytes)
            item.attempts += 1
        }
        w.end()
        var answered = 0
        var lastProgress = monotonicSeconds()
        if !child.send(w.bytes, deadline: lastProgress + timeout) {
            finishCrash(batch: batch, answered: 0, sequence: sequence, timedOut: !isGone(), timeout: timeout)
            return
        }
        while answered < batch.count {
            condition.lock()
            let beats = heartbeats
            while incoming.isEmpty && !childGone && heartbeats == beats {
                if !condition.wait(until: Date(timeIntervalSinceNow: max(0, lastProgress + timeout - monotonicSeconds()))) { break }
                if monotonicSeconds() >= lastProgress + timeout { break }
            }
            let results = incoming
            incoming.removeAll(keepingCapacity: true)
            let gone = childGone
            let beat = heartbeats != beats
            condition.unlock()
            if results.isEmpty && beat && !gone {
                // The runner waits before retrying an item: not the library's time.
                lastProgress = monotonicSeconds()
                continue
            }
            if !results.isEmpty {
                for (status, message) in results where answered < batch.count {
                    complete(batch[answered], status: status, message: message)
                    answered += 1
                }
                // After handling them: a retry's backoff is not the library's time.
                lastProgress = monotonicSeconds()
                continue
            }
            finishCrash(batch: batch, answered: answered, sequence: sequence, timedOut: !gone, timeout: timeout)
            return
        }
        crashesInARow = 0
    }

    private func currentPlugins() -> IsolatedPlugins? {
        condition.lock()
        defer { condition.unlock() }
        return plugins
    }

    private func isStopping() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func isGone() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return childGone
    }

    /// The child died or hung in batch `sequence`: the item it was calling (from the progress
    /// page; else the first unanswered) is the culprit; every unanswered item goes again.
    private func finishCrash(batch: [Item], answered: Int, sequence: UInt64, timedOut: Bool, timeout: Double) {
        guard let child else { return }
        child.kill()  // after a crash this changes nothing; a hung or silent child ends here
        let status = child.wait()
        var culprit: Item?
        var inFlight = Array(batch[answered...])
        let pluginCall = currentPlugins()?.inFlight
        if let pluginCall {
            // A timeline plugin's call was in progress: the item is not blamed, it goes again.
            crashed(status: status, during: pluginCall, culprit: nil, inFlight: inFlight, requeue: [], timedOut: false, timeout: timeout)
            return
        }
        if let progress, let index = progress.item(inBatch: sequence), index >= answered, index < batch.count {
            culprit = batch[index]
            // What it finished before: done, with the status it stored (only the text of a
            // failure is lost with the process).
            for i in answered..<index where i < ProgressPage.maxItems {
                complete(batch[i], status: progress.status(ofItem: i), message: "(its reason was lost with the process)")
            }
            inFlight = Array(batch[index...])
        } else if answered < batch.count {
            culprit = batch[answered]
        }
        culprit?.crashes += 1
        crashed(status: status, during: culprit?.label, culprit: culprit, inFlight: inFlight, requeue: [], timedOut: timedOut, timeout: timeout)
    }

    private enum StartOutcome {
        case started(replay: [Item])
        case failed(status: Int32, during: String)
        case refused(String)

        var isStarted: Bool { if case .started = self { return true }; return false }
    }

    /// Spawns a runner, waits for it to load the library and create the instance; a restarted one
    /// first hears the initial update and lifecycle(started) again (the library cannot tell), and
    /// no application event from before the crash: like an instance a refresh creates in-process,
    /// it hears only lifecycle(started). Those not yet answered are sent again with the rest.
    private func startChild(timeout: Double) -> StartOutcome {
        let process: RunnerProcess
        do throws(RunnerProcess.SpawnError) {
            var arguments = ["--serve", info.file] + memoryLimitArguments()
            arguments += ["--toolchain", SwiftToolchain.current]
            if progress != nil { arguments.append("--progress") }
            process = try RunnerProcess.spawn(runner: runner, arguments: arguments, progress: progress)
        } catch {
            return .refused("cannot start \(PluginRunnerLocator.executableName): \(error)")
        }
        let (hookTimeout, analytics) = client.withLock { ($0.hookTimeout, $0.analytics.value) }
        let plugins = IsolatedPlugins(key: key, analytics: analytics, process: process, timeout: hookTimeout) { [weak process] in process?.kill() }
        let signals = IsolatedSignals(signals: analytics?.signals, process: process, key: key, timeout: hookTimeout)
        func fail(_ during: String) -> StartOutcome {
            process.kill()  // a dead child keeps its status; a live one that stopped answering ends
            let status = process.wait()
            signals.end()
            plugins.end("its process \(RunnerProcess.describe(status: status)) while \(during)")
            return .failed(status: status, during: during)
        }
        // Starting a process and loading the library is not a hook call: at least 5 s for it
        // (and for `create`), however short the per-call deadline is.
        let deadline = monotonicSeconds() + max(timeout, 5)
        guard process.readable(until: deadline), let (kind, payload) = process.readFrame() else { return fail("loading the library") }
        if kind == .refused {
            var r = WireReader(payload)
            let text = r.text()
            process.wait()
            if let o = (try? JSON(parsing: text))?.objectValue, case .failure(let error)? = ScanRecord.decode(o) {
                return .refused("could not be created: \(error.reasonText)")
            }
            return .refused("could not be created: the runner refused the library")
        }
        var w = WireWriter()
        w.begin(.start)
        w.data(startPayload)
        w.end()
        guard process.send(w.bytes, deadline: deadline) else { return fail("creating the instance") }
        // `create` may call the host (log, ids, send_event, timeline plugins) before it returns,
        // and the plugins it added may already be answering events.
        var answer: [UInt8]?
        let services = client.withLock { $0.services }
        while answer == nil {
            guard process.readable(until: deadline), let (frameKind, frame) = process.readFrame() else { return fail("creating the instance") }
            switch frameKind {
            case .started: answer = frame
            case .call: if let services { self.answer(frame, services: services, process: process, plugins: plugins, signals: signals) }
            case .verdict: plugins.deliverVerdict(frame)
            default: return fail("creating the instance")
            }
        }
        var r = WireReader(answer ?? [])
        if r.u8() != IsolationWire.ok {
            let message = r.text()
            process.closeChannel()
            process.wait()
            signals.end()
            plugins.end("its instance could not be created")
            return .refused("could not be created: create failed: \(message)")
        }
        condition.lock()
        child = process
        currentChild = process
        self.plugins = plugins
        self.signals = signals
        childGone = false
        incoming.removeAll()
        condition.unlock()
        let reader = Thread { [self] in readLoop(process, plugins: plugins, signals: signals) }
        reader.name = "isolated \(key) reader"
        reader.start()
        var replay: [Item] = []
        if everStarted {
            if let settings = latestSettings.withLock({ $0 }) { replay.append(Item(op: .updateInitial, bytes: settings, replay: true)) }
            if started { replay.append(Item(op: .lifecycleStarted, replay: true)) }
            client.withLock { $0.stats }?._restarts.wrappingAdd(1, ordering: .relaxed)
        }
        everStarted = true
        return .started(replay: replay)
    }

    /// Reads the child's frames: results for the pump, calls answered here.
    private func readLoop(_ process: RunnerProcess, plugins: IsolatedPlugins, signals: IsolatedSignals) {
        let services = client.withLock { $0.services }
        while let (kind, payload) = process.readFrame() {
            switch kind {
            case .results:
                var r = WireReader(payload)
                let count = Int(r.u32())
                if count == 0 {
                    condition.lock()
                    heartbeats += 1
                    condition.broadcast()
                    condition.unlock()
                    continue
                }
                var parsed: [(UInt8, String)] = []
                parsed.reserveCapacity(count)
                for _ in 0..<count {
                    let status = r.u8()
                    let message = r.text()
                    if r.failed { break }
                    parsed.append((status, message))
                }
                condition.lock()
                incoming.append(contentsOf: parsed)
                condition.broadcast()
                condition.unlock()
            case .call:
                if let services { answer(payload, services: services, process: process, plugins: plugins, signals: signals) }
            case .verdict:
                plugins.deliverVerdict(payload)
            default:
                break
            }
        }
        condition.lock()
        if currentChild === process { childGone = true }
        condition.broadcast()
        condition.unlock()
    }

    private func answer(_ payload: [UInt8], services: HostServices, process: RunnerProcess, plugins: IsolatedPlugins,
                        signals: IsolatedSignals) {
        var r = WireReader(payload)
        let id = r.u32()
        let function = IsolationWire.Function(rawValue: r.u8())
        let arg = r.i64()
        let bytes = r.data()
        guard !r.failed, let function else { return }
        var status = IsolationWire.ok
        var reply: [UInt8] = []
        func set(_ result: NativeHookResult) {
            switch result {
            case .ok: status = IsolationWire.ok
            case .retryable(let m): status = IsolationWire.retryable; reply = Array(m.utf8)
            case .permanent(let m): status = IsolationWire.permanent; reply = Array(m.utf8)
            }
        }
        switch function {
        case .log:
            services.log(NativeLogLevel(rawValue: Int32(truncatingIfNeeded: arg)) ?? .info, String(decoding: bytes, as: UTF8.self))
        case .sendEvent: set(services.sendEvent(bytes))
        case .userId:
            if let id = services.userId() { reply = Array(id.utf8) } else { status = IsolationWire.absent }
        case .anonymousId:
            if let id = services.anonymousId() { reply = Array(id.utf8) } else { status = IsolationWire.absent }
        case .traits: reply = (services.client?.traits() ?? [:]).serializedBytes()
        case .clientReset: set(services.client?.reset() ?? .permanent("no client"))
        case .clientFlush: set(services.client?.flush() ?? .permanent("no client"))
        case .timelineAdd:
            do throws(NativePluginRegistry.AddError) {
                try plugins.add(runnerId: UInt64(bitPattern: arg), description: (try? JSON(parsing: bytes))?.objectValue ?? [:])
            } catch {
                switch error {
                case .invalid(let why):
                    set(.permanent(why))
                    plugins.registry.report("add refused: \(why)")
                case .stopping(let why): set(.retryable(why))
                }
            }
        case .timelineRemove:
            if !plugins.remove(runnerId: UInt64(bitPattern: arg)) { set(.permanent("no plugin with id \(arg)")) }
        case .signalEmit:
            let result = bytes.withUnsafeBytes { HostSignalsTable.emit($0, into: services.signals()) }
            if case .failure(let e) = result {
                status = e.status == ah_status(AH_ERR_RETRYABLE) ? IsolationWire.retryable : IsolationWire.permanent
                reply = Array(e.message.utf8)
            }
        case .signalForward: set(signals.forward())
        case .signalConfiguration:
            if let text = HostSignalsTable.configurationText(of: services.signals()) { reply = Array(text.utf8) } else { status = IsolationWire.absent }
        case .httpSend:
            // Answered when the exchange ends, from the thread that made it.
            httpRelay.send(bytes, id: id, services: services, process: process)
            return
        }
        guard id != 0 else { return }
        var w = WireWriter()
        w.begin(.reply)
        w.u32(id)
        w.u8(status)
        w.data(reply)
        w.end()
        _ = process.send(w.bytes, deadline: monotonicSeconds() + 5)
    }

    // MARK: Outcomes

    /// An item's answer from the library.
    private func complete(_ item: Item, status: UInt8, message: String) {
        if item.replay { return }
        switch status {
        case IsolationWire.ok:
            item.done?.signal()
        default:
            // The runner retried a retryable failure in place, per `retryPolicy`, before answering.
            let what = item.callName
            let attempts = retryPolicy.maxAttempts
            let text = item.op == .application ? applicationFailure(what, retryable: status == IsolationWire.retryable, message)
                : status == IsolationWire.retryable
                ? "\(what) failed after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(message)"
                : "\(what) failed: \(message)"
            fail(item, report: text)
        }
    }

    /// An application event's failure, never retried, in the words the in-process instance of the
    /// same role uses (`NativeDestination`, `NativeExtension`).
    private func applicationFailure(_ what: String, retryable: Bool, _ message: String) -> String {
        if info.isDestination { return "\(what) failed (not retried): \(message)" }
        return retryable ? "\(what) failed (retryable, not retried): \(message)" : "\(what) failed: \(message)"
    }

    private func requeueFront(_ items: [Item]) {
        guard !items.isEmpty else { return }
        condition.lock()
        if outboxHead >= items.count {
            outboxHead -= items.count
            for (i, item) in items.enumerated() { outbox[outboxHead + i] = item }
        } else {
            outbox.replaceSubrange(0..<outboxHead, with: items)
            outboxHead = 0
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Counts an event failed and reports why.
    private func fail(_ item: Item, report text: String?) {
        let (analytics, stats) = client.withLock { ($0.analytics.value, $0.stats) }
        if item.event != nil { stats?.recordFailure() }
        if let text { analytics?.report(.plugin(name: key, message: text)) }
        item.done?.signal()
    }

    /// An item that will never reach the library (disabled, or stopped): counted, not reported
    /// one by one (the reason was reported once).
    private func giveUp(_ item: Item, counted: Bool) {
        if item.replay { return }
        fail(item, report: nil)
    }

    /// The runner's memory limit: the library's cgroup (made at its first start) where the host
    /// may make one and `memoryLimit` allows it, else RLIMIT_AS.
    private func memoryLimitArguments() -> [String] {
        guard limits.memoryLimitBytes > 0 else { return [] }
        if limits.memoryLimit == .automatic && !cgroupTried {
            cgroupTried = true
            cgroup = RunnerCgroup.make(limitBytes: limits.memoryLimitBytes).cgroup
        }
        if let cgroup { return ["--cgroup", cgroup.path] }
        return ["--memory-limit", String(limits.memoryLimitBytes)]
    }

    /// How the runner ended, with what its memory limit had to do with it.
    private func describeEnd(status: Int32, during: String?) -> String {
        let text = RunnerProcess.describe(status: status)
        if status & 0x7f == SIGKILL, let cgroup, cgroup.consumeOOMKill() {
            return "was stopped by its memory limit (\(cgroup.limitBytes) bytes, memory cgroup \(cgroup.path)): it \(text)"
        }
        if cgroup == nil, limits.memoryLimitBytes > 0, during == "loading the library" || during == "creating the instance" {
            return text + " (its address space is limited to \(limits.memoryLimitBytes) bytes, RLIMIT_AS: a library that "
                + "reserves more at start, as JavaScriptCore does (about 6 GiB), needs a higher --isolate-memory, 0, or a "
                + "memory cgroup the host may make)"
        }
        return text
    }

    private func crashed(status: Int32, during: String?, culprit: Item?, inFlight: [Item], requeue: [Item], timedOut: Bool, timeout: Double) {
        endChild()
        let now = monotonicSeconds()
        crashTimes = crashTimes.filter { now - $0 < limits.crashWindow } + [now]
        crashesInARow += 1
        var again = inFlight.filter { !$0.replay }
        var givenUp: Item?
        if let culprit, !culprit.replay, culprit.crashes >= limits.maxAttempts {
            givenUp = culprit
            again.removeAll { $0 === culprit }
        }
        let events = again.filter { $0.event != nil }.count
        client.withLock { $0.stats }?._retried.wrappingAdd(events, ordering: .relaxed)
        let what = timedOut
            ? "did not answer within \(timeout) s and was killed"
            : describeEnd(status: status, during: during)
        var text = "library \(info.file) (process-isolated) \(what) while \(during ?? "idle")"
        let willDisable = crashTimes.count >= limits.maxCrashes
        if let givenUp {
            text += "; it ended the process \(givenUp.crashes) time\(givenUp.crashes == 1 ? "" : "s") and is counted failed"
        }
        let delay = min(limits.maxRestartDelay, limits.restartDelay * pow(2, Double(max(0, crashesInARow - 1))))
        if willDisable {
            text += "; \(crashTimes.count) crashes within \(limits.crashWindow) s: disabled, its events are counted failed from now on"
        } else {
            if events > 0 { text += "; \(events) event\(events == 1 ? "" : "s") in flight will be sent again" }
            text += "; restarting in \(delay) s"
        }
        client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: text))
        if let givenUp { fail(givenUp, report: nil) }
        if willDisable {
            disable(nil)
            for item in again + requeue { giveUp(item, counted: true) }
            return
        }
        requeueFront(again + requeue)
        Thread.sleep(forTimeInterval: delay)
    }

    /// Stops sending to the library; what is queued is counted failed.
    private func disable(_ reason: String?) {
        condition.lock()
        let first = disabled == nil
        if first { disabled = reason ?? "crashed too often" }
        let left = Array(outbox[outboxHead...])
        outbox.removeAll()
        outboxHead = 0
        condition.broadcast()
        condition.unlock()
        if first, let reason { client.withLock { $0.analytics.value }?.report(.plugin(name: key, message: reason)) }
        for item in left { giveUp(item, counted: true) }
    }

    private func endChild() {
        guard let process = child else { return }
        child = nil
        condition.lock()
        if currentChild === process { currentChild = nil }
        let plugins = self.plugins
        let signals = self.signals
        self.plugins = nil
        self.signals = nil
        condition.unlock()
        signals?.end()
        // Its timeline plugins leave the timeline; calls in progress fail (reported per plugin).
        plugins?.end("its process ended (the library's report says why)")
        // Its last answer (destroy's, or the crash) is in: nothing of the library runs any more
        // that the host waits for.
        process.closeChannel()
        process.kill()
        process.wait()
    }
}
