import Foundation

/// The analytics client: turns calls into Segment events and runs them through its timeline.
/// Every method is safe to call from any thread.
public final class Analytics: Sendable {
    public let configuration: Configuration
    /// The client's timeline (source plugins, destinations, after and utility plugins).
    public let timeline = Timeline()

    /// The one user of device mode; nil in server mode, where every event carries its own ids
    /// and nothing of one event is kept for the next (``IdentityMode``).
    private let user: Locked<UserState>?
    private let store: UserStore
    let userWriter: UserStateWriter
    private let currentSettings: Locked<Settings>
    private let stopped = Locked(false)
    private let settingsSource: SettingsSource?
    private let refresher = Locked<SettingsRefresher?>(nil)
    /// Libraries loaded from `pluginsDirectory`, and those refused (each with file and reason).
    package let pluginScan: PluginLoader.ScanResult
    /// Libraries of `pluginsDirectory` that run in process mode (never opened in this process).
    package let isolatedLibraries: [NativeLibraryInfo]
    /// Factories: the configured ones, then one per loaded library.
    private let factories: [IntegrationFactory]
    /// Plugins (destinations, and libraries that are not destinations) made from factories, by key.
    private let madeByFactory = Locked<[String: Plugin]>([:])
    /// The isolation mode the settings asked for, by key, when it was not the one running (said once).
    private let isolationAsked = Locked<[String: IsolationMode]>([:])
    /// The client's signals when `Configuration.signals` is set: emit breadcrumbs here, from any
    /// thread; every event also becomes an instrumentation signal.
    public let signals: Signals?
    /// Plugins for destinations' own timelines, by destination key (libraries add them, ABI 1.2).
    let scopedPlugins = ScopedPlugins()
    /// Errors loaded libraries logged and their plugins' failed calls, for a summary at the end.
    package let libraryProblems = LibraryProblems()
    /// Events libraries sent back, run through the pipeline in order off the sender's thread.
    private let sentBack = DispatchQueue(label: "analytics-host.sent-back")
    private let sentBackKey = DispatchSpecificKey<Bool>()
    private let sentBackState = Locked(SentBack())
    private struct SentBack {
        /// False once shutdown ran what producers sent last: later sends are refused.
        var accepting = true
        /// Sent, not yet through the pipeline (bounded like a destination's queue).
        var pending = 0
        /// Until the client is set up: what an earlier run's journal held, then what libraries
        /// send while they are created; run (in that order) once every destination is there.
        var held: [Event]? = []
    }
    /// Events sent back are on disk before the library hears AH_OK (see ``SentBackJournal``).
    private let sentBackJournal: SentBackJournal
    /// The storage's secret (`storage.key`), which keys the MACs of every queue's records; the
    /// failure to read or make it when it cannot (then no queue opens: events are refused and
    /// reported, never stored unchecked).
    package let storageSecret: Result<StorageSecret, QueueError>
    let report: @Sendable (AnalyticsError) -> Void
    let log: @Sendable (LogLevel, String) -> Void
    /// Why the storage directory could not be created, if it could not.
    private let directoryError: AnalyticsError?
    /// State behind analytics-swift's surface (`enabled`, `waitUntilStarted()`, the referrer).
    let compatibility = ClientCompatibilityState()
    /// The job-control signal watcher, when `applicationEventsFromJobControl` is on.
    let jobControl = Locked<JobControlWatcher?>(nil)
    /// Clients libraries opened for other write keys (`AH_EXT_CLIENTS`), stopped after them.
    let secondClients = SecondClients()
    /// The rate limits of its libraries' log lines, by key: what they suppressed last is said
    /// at the end of `shutdown` (it is otherwise said a second later, which a host that ends
    /// sooner would not wait for).
    let libraryLogRates = Locked<[String: LibraryOutput.Rate]>([:])

    /// Starts a client and fails if it cannot keep what it accepts: the storage directory cannot
    /// be created or written, or the Segment.io upload queue cannot be opened (another process
    /// holds it, a path component is a file, a read-only or full disk). `init` never throws — it
    /// reports the problem and refuses those events (see ``storageError``); this is the checked way.
    public static func start(configuration: Configuration) throws(AnalyticsError) -> Analytics {
        let analytics = Analytics(configuration: configuration)
        if let error = analytics.storageError {
            analytics.shutdown()
            throw error
        }
        return analytics
    }

    /// Why this client cannot store what it accepts (nil when storage works): the storage directory
    /// is unusable, or the Segment.io destination could not open its queue and refuses its events.
    public var storageError: AnalyticsError? {
        if let directoryError { return directoryError }
        if let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination, let error = segment.storageError {
            return .storage("cannot open the Segment.io upload queue \(segment.queueDirectory): \(error)")
        }
        return nil
    }

    public init(configuration: Configuration) {
        let configuration = SegmentDestinationFactory.registering(in: configuration.resolvingStorageMode())
        self.configuration = configuration
        sentBack.setSpecific(key: sentBackKey, value: true)
        let report: @Sendable (AnalyticsError) -> Void = configuration.errorHandler ?? { error in
            FileHandle.standardError.write(Data("analytics-host: \(error)\n".utf8))
        }
        self.report = report
        let log: @Sendable (LogLevel, String) -> Void = configuration.logHandler ?? { level, message in
            if level >= .warning { FileHandle.standardError.write(Data("analytics-host: \(level.rawValue): \(message)\n".utf8)) }
        }
        self.log = log

        var directoryError: AnalyticsError?
        if let why = DirectoryCreation.make(configuration.storageDirectory) {
            directoryError = .storage("cannot create storage directory \(configuration.storageDirectory): \(why)")
        } else if access(configuration.storageDirectory, W_OK) != 0 {
            directoryError = .storage("storage directory \(configuration.storageDirectory) is not writable: \(String(cString: strerror(errno)))")
        }
        self.directoryError = directoryError
        if let directoryError { report(directoryError) }
        do throws(QueueError) {
            let secret = try StorageSecret.open(directory: configuration.storageDirectory)
            if let problem = secret.problem { report(.storage(problem.description)) }
            storageSecret = .success(secret)
        } catch {
            if directoryError == nil { report(.storage("cannot read or make the storage key: \(error)")) }
            storageSecret = .failure(error)
        }
        sentBackJournal = SentBackJournal(storageDirectory: configuration.storageDirectory, secret: storageSecret, report: report)
        let leftOver = sentBackJournal.leftOver()
        sentBackState.withLock { $0.held = leftOver }
        store = UserStore(directory: configuration.storageDirectory, secret: try? storageSecret.get())
        let device = configuration.identity == .device
        // Server mode neither reads nor writes user.json: no user is kept, none is minted.
        let saved = device ? store.load(report: report) : nil
        userWriter = UserStateWriter(store: store, report: report)
        user = device ? Locked(saved ?? UserState(anonymousId: MessageID.make())) : nil
        settingsSource = Analytics.makeSettingsSource(configuration)
        let initial = settingsSource?.loadWithoutNetwork()
        let settings = initial.map { Settings($0.settings) } ?? configuration.defaultSettings ?? .fallback(writeKey: configuration.writeKey)
        currentSettings = Locked(settings)

        signals = configuration.signals.map {
            Signals(configuration: $0, settings: settings, writeKey: configuration.writeKey, application: configuration.application,
                    log: log, report: report)
        }

        if let dir = configuration.pluginsDirectory {
            // Each library is loaded in analytics-plugin-runner first (Libraries/Isolated/), then opened
            // here or left to runners by its isolation mode.
            let loaded = IsolatedStartup.load(directory: dir, configuration: configuration, settings: settings, log: log)
            pluginScan = loaded.scan
            isolatedLibraries = loaded.isolated.map(\.info)
            factories = configuration.integrationFactories + pluginScan.factories(retryPolicy: configuration.libraryRetryPolicy) + loaded.isolated
        } else {
            pluginScan = PluginLoader.ScanResult(libraries: [], problems: [])
            isolatedLibraries = []
            factories = configuration.integrationFactories
        }

        timeline.configureClient(self, queueCapacity: configuration.destinationQueueCapacity,
                                 overflow: configuration.destinationOverflow, hookTimeout: configuration.hookTimeout,
                                 report: report)
        for problem in pluginScan.problems { report(problem.analyticsError) }
        var provided = Set(factories.map(\.key))
        // Options for libraries also count as the host knowing the key.
        provided.formUnion(configuration.pluginOptions.keys)
        for key in settings.integrations.keys where !provided.contains(key) {
            let (level, message) = Self.unprovidedKeyMessage(key, refused: pluginScan.problems)
            log(level, message)
        }
        if !configuration.sourceMiddleware.isEmpty {
            timeline.add(MiddlewarePlugin(configuration.sourceMiddleware))
        }
        timeline.add(ContextPlugin(identity: configuration.identity, application: configuration.application))
        if let signals { timeline.add(signals) }
        for plugin in configuration.plugins { add(plugin: plugin) }
        reconcileFactories(with: settings)
        timeline.update(settings: settings, type: .initial)
        for problem in initial?.problems ?? [] { report(.settings(problem.description)) }
        if device && saved == nil { persistUser() }
        // Every destination is there: what an earlier run accepted from libraries and did not run,
        // then what libraries sent meanwhile, run now (before anything sent later).
        sentBackState.withLock { s in
            let held = s.held ?? []
            s.held = nil
            if !held.isEmpty { scheduleSentBack(held, pending: held.count - leftOver.count) }
        }
        if device && configuration.trackApplicationLifecycleEvents { trackLaunch(previous: saved) }
        startSettingsRefresh()
        finishStarting()
    }

    // MARK: Plugins

    /// Adds a plugin. A destination first gets, in its own timeline, the destination middleware
    /// configured for its key and then its destination filters (settings' routing rules), so the
    /// filters have the last word on what leaves. Segment.io gets no filters: the server applies them.
    @discardableResult
    public func add(plugin: Plugin) -> Plugin {
        if let destination = plugin as? DestinationPlugin, plugin.type == .destination {
            if let chain = configuration.destinationMiddleware[destination.key], !chain.isEmpty {
                destination.timeline.add(MiddlewarePlugin(chain, destinationKey: destination.key))
            }
            if destination.key != RoutingRules.segmentDestinationKey {
                destination.addDestinationFilters(random: configuration.randomSource)
            }
            // Then the plugins libraries scoped to this key, before the first event arrives.
            scopedPlugins.destinationAdded(key: destination.key, timeline: destination.timeline)
        }
        timeline.add(plugin)
        return plugin
    }

    public func remove(plugin: Plugin) {
        timeline.remove(plugin)
        if let destination = plugin as? DestinationPlugin, plugin.type == .destination {
            scopedPlugins.destinationRemoved(key: destination.key, timeline: destination.timeline)
        }
    }

    /// The destination with this key.
    public func find(key: String) -> DestinationPlugin? { timeline.find(key: key) }

    // MARK: Settings

    public var settings: Settings { currentSettings.withLock { $0 } }

    /// Applies new settings everywhere: every plugin, including those inside destinations.
    public func update(settings: Settings, type: UpdateType = .refresh) {
        currentSettings.withLock { $0 = settings }
        timeline.update(settings: settings, type: type)
        // After the timeline holds the new settings, so new destinations start with them.
        reconcileFactories(with: settings)
        reportIsolationChanges(in: settings)
    }

    /// A library's isolation mode is chosen when it is loaded (a process-mode library is never
    /// opened by the host); a refresh that asks for another one says so instead of ignoring it.
    private func reportIsolationChanges(in settings: Settings) {
        let running = pluginScan.libraries.map { ($0.info, IsolationMode.inProcess) } + isolatedLibraries.map { ($0, IsolationMode.process) }
        for (info, mode) in running {
            let asked = configuration.isolation.mode(for: info, settings: settings)
            let previous = isolationAsked.withLock { $0.updateValue(asked, forKey: info.key) }
            guard asked != mode, asked != previous else { continue }
            log(.warning, "\(info.key) runs \(mode == .process ? "in process mode" : "in-process"); the settings now ask for "
                + "\(asked == .process ? "process mode" : "in-process"): a library's isolation is chosen at start-up (restart to apply)")
        }
    }

    /// Reads the settings again from their location (file or CDN, with the cache and defaults
    /// as fallbacks) and applies them as a refresh. Unusable settings are reported with their JSON
    /// path and the settings in force stay. Returns where the settings in force now come from.
    @discardableResult
    public func refreshSettings() -> SettingsOrigin {
        guard let source = settingsSource else { return .defaults }
        let result = source.load(previous: settings.json)
        for problem in result.problems { report(.settings(problem.description)) }
        if result.origin != .previous { update(settings: Settings(result.settings), type: .refresh) }
        return result.origin
    }

    static func makeSettingsSource(_ c: Configuration) -> SettingsSource? {
        var sc = SettingsSourceConfiguration(writeKey: c.writeKey, storageDirectory: c.storageDirectory,
                                             defaultSettings: c.defaultSettings?.json)
        switch c.settingsLocation {
        case .defaultsOnly: return nil
        case .file(let path): sc.localFile = path
        case .cdn(let host): sc.cdnHost = host
        }
        return SettingsSource(configuration: sc)
    }

    /// A CDN source is fetched once in the background right away; any source is refreshed on the
    /// configured interval.
    private func startSettingsRefresh() {
        guard settingsSource != nil else { return }
        if case .cdn = configuration.settingsLocation {
            Thread.detachNewThread { [weak self] in
                self?.refreshSettings()
                self?.compatibility.markStarted()
            }
        }
        if let interval = configuration.settingsRefreshInterval, interval > 0 {
            refresher.withLock { $0 = SettingsRefresher(interval: interval) { [weak self] in self?.refreshSettings() } }
        }
    }

    /// Creates a destination for each factory whose key the settings name and that has none yet;
    /// destroys those whose key the settings no longer name. Failures are reported per key.
    private func reconcileFactories(with settings: Settings) {
        for factory in factories {
            let key = factory.key
            let existing = madeByFactory.withLock { $0[key] }
            switch (factory.creationSettings(from: settings), existing) {
            case (let options?, nil):
                if let declared = factory as? any DeclaresSettingsSchema {
                    let problems = declared.schemaProblems(in: settings)
                    for warning in problems where warning.isWarning { log(.warning, "settings of \(key): \(warning.path): \(warning.message)") }
                    let errors = problems.filter { !$0.isWarning }
                    if !errors.isEmpty {
                        let reason = "its settings do not match what it declares: " + errors.map { "\($0.path): \($0.message)" }.joined(separator: "; ")
                        libraryProblems.notCreated(key: key, reason)
                        report(.plugin(name: key, message: "could not be created: \(reason)"))
                        continue
                    }
                }
                do {
                    let plugin = try factory.makePlugin(settings: options, analytics: self)
                    madeByFactory.withLock { $0[key] = plugin }
                    add(plugin: plugin)
                } catch {
                    libraryProblems.notCreated(key: key, "\(error)")
                    report(.plugin(name: key, message: "could not be created: \(error)"))
                }
            case (nil, let plugin?):
                madeByFactory.withLock { $0[key] = nil }
                remove(plugin: plugin)
                log(.info, "\(plugin is DestinationPlugin ? "destination" : "plugin") \(key) removed: the settings no longer ask for it")
            default:
                break
            }
        }
    }

    // MARK: User

    /// The device's user (nil in server mode, where there is none).
    public var userId: String? { user?.withLock { $0.userId } }
    /// The device's anonymousId ("" in server mode, where there is none: see ``storedAnonymousId``).
    public var anonymousId: String { user?.withLock { $0.anonymousId } ?? "" }
    /// The device user's traits ([:] in server mode).
    public var traits: JSONObject { user?.withLock { $0.traits } ?? [:] }
    /// The device's anonymousId, nil in server mode (what libraries read through `anonymous_id`).
    var storedAnonymousId: String? { user?.withLock { $0.anonymousId } }

    /// Hands the current state to the writer (saved off this path; see ``UserStateWriter``).
    /// Nothing in server mode.
    private func persistUser() {
        guard let user else { return }
        userWriter.changed(user.withLock { $0 })
    }

    // MARK: Calls

    public func track(_ name: String, properties: JSONObject? = nil, integrations: JSONObject? = nil) {
        var fields: JSONObject = ["event": .string(name)]
        fields["properties"] = .object(properties ?? [:])
        send(.track, fields, integrations: integrations)
    }

    /// Sets the user (when given) and merges `traits` into the saved ones. In server mode nothing
    /// is kept: the event carries `userId` and `traits` as given (refused without a userId).
    public func identify(userId: String? = nil, traits: JSONObject? = nil, integrations: JSONObject? = nil) {
        guard let user else {
            send(.identify, ["traits": .object(traits ?? [:])], integrations: integrations, serverUserId: userId)
            return
        }
        let merged = user.withLock { state -> JSONObject in
            if let userId { state.userId = userId }
            if let traits { state.traits.merge(traits) }
            return state.traits
        }
        persistUser()
        send(.identify, ["traits": .object(merged)], integrations: integrations)
    }

    public func screen(_ name: String?, category: String? = nil, properties: JSONObject? = nil, integrations: JSONObject? = nil) {
        var fields: JSONObject = [:]
        if let name { fields["name"] = .string(name) }
        if let category { fields["category"] = .string(category) }
        fields["properties"] = .object(properties ?? [:])
        send(.screen, fields, integrations: integrations)
    }

    public func group(groupId: String, traits: JSONObject? = nil, integrations: JSONObject? = nil) {
        send(.group, ["groupId": .string(groupId), "traits": .object(traits ?? [:])], integrations: integrations)
    }

    /// Links the current identity to `newId`, which becomes the userId. In server mode there is no
    /// current identity to link: refused (reported); send the alias with `process(payload:)`.
    public func alias(_ newId: String, integrations: JSONObject? = nil) {
        guard let user else {
            report(.invalidEvent("alias(\"\(newId)\"): in server mode there is no current identity to link (no previousId); "
                                 + "send the alias message with its userId and previousId through process(payload:)"))
            return
        }
        let previous = user.withLock { state -> String in
            let previous = state.userId ?? state.anonymousId
            state.userId = newId
            return previous
        }
        persistUser()
        send(.alias, ["previousId": .string(previous)], integrations: integrations)
    }

    /// Builds the message for a call and runs it; refused calls go to the error handler. Device
    /// mode stamps the device's user; server mode only a `serverUserId` the call itself gave.
    private func send(_ type: EventType, _ fields: JSONObject, integrations: JSONObject?, serverUserId: String? = nil) {
        guard enabled else { return }
        let (userId, anonymousId) = user.map { u in u.withLock { ($0.userId, Optional($0.anonymousId)) } } ?? (serverUserId, nil)
        var payload = JSONObject()
        payload.storage.reserveCapacity(fields.count + 7)
        payload.appendUnique("type", .string(type.rawValue))
        payload.storage.append(contentsOf: fields.storage)
        if let userId { payload.appendUnique("userId", .string(userId)) }
        if let anonymousId { payload.appendUnique("anonymousId", .string(anonymousId)) }
        payload.appendUnique("messageId", .string(MessageID.make()))
        payload.appendUnique("timestamp", .string(ISOTimestamp.now()))
        payload.appendUnique("integrations", .object(integrations ?? [:]))
        let event = Event(type: type, payload: payload)
        do {
            if user == nil { try event.requireOwnIds() }
            try event.validate()
        } catch {
            report(.invalidEvent(error.description.replacingOccurrences(of: "invalid event: ", with: "")))
            return
        }
        if PipelineThread.isInside { runLater(event); return }
        timeline.process(event)
    }

    /// Runs a message given as JSON (a spec-shaped object, e.g. one line of input). `messageId`,
    /// `timestamp`, `context` and `integrations` are kept when given and filled in when not. In
    /// device mode user ids default to the client's (and an identify or alias changes the client's
    /// user); in server mode the message's ids are its own and one with neither is refused.
    /// Returns the event as it left the source stage, nil if dropped.
    ///
    /// Called from inside the pipeline (a plugin's hook), the event runs later (see ``runLater``)
    /// and is returned as prepared, before any plugin saw it.
    @discardableResult
    public func process(payload: JSONObject) throws(EventError) -> Event? {
        guard enabled else { return nil }
        let event = try prepare(payload: payload)
        if PipelineThread.isInside { runLater(event); return event }
        return timeline.process(event)
    }

    /// A call made by a plugin from inside the pipeline (``PipelineThread``): running it now would
    /// wait on what that thread holds, so it takes the sent-back path (journaled, run in order on
    /// the host's queue) without `send_event`'s refusals — the caller cannot wait, and a Swift call
    /// has no status to refuse with. Only a stopping host or an unstorable event is refused, and
    /// reported.
    private func runLater(_ event: Event) {
        let accepting = sentBackState.withLock { s -> Bool in
            guard s.accepting else { return false }
            s.pending += 1
            return true
        }
        guard accepting else {
            report(.delivery("\(event.type.rawValue) event \(event.messageId ?? "(no messageId)") sent from inside a plugin after shutdown; not delivered"))
            return
        }
        if case .unstorable(let reason, _) = journalAndSchedule(event) {
            report(.storage("\(event.type.rawValue) event \(event.messageId ?? "(no messageId)") sent from inside a plugin could not be kept: \(reason)"))
        }
    }

    /// An event a library sent back (`ah_host.send_event`): answered now, run through the pipeline
    /// later on a host queue, in the order sent (a library often sends from inside one of its
    /// callbacks, which must never be re-entered synchronously: the header's rule). Refused
    /// (queued nowhere, the user untouched) while some destination's queue or this queue is full,
    /// and once the host can no longer deliver; otherwise checked and applied to the user now (an
    /// identify or alias changes the user before the call returns), written to the sent-back
    /// journal (so a SIGKILL before it runs loses nothing: the next start runs it) and delivered
    /// like any event. `flush()` and `shutdown()` first wait for what was sent before they were called.
    func enqueueSentBack(payload: JSONObject) throws(EventError) -> Timeline.Offer {
        if let refused = timeline.refusal() { return refused }
        let capacity = configuration.destinationQueueCapacity
        let admitted = sentBackState.withLock { s -> Timeline.Offer? in
            guard s.accepting else { return .stopping }
            guard s.pending < capacity else { return .saturated(destination: "events sent back") }
            s.pending += 1
            return nil
        }
        if let admitted { return admitted }
        let event: Event
        do { event = try prepare(payload: payload) } catch {
            sentBackState.withLock { $0.pending -= 1 }
            throw error
        }
        return journalAndSchedule(event)
    }

    /// Writes an admitted event (counted in `pending`) to the sent-back journal and schedules it.
    /// Journal and schedule under one lock: entries are crossed off in the order they run.
    private func journalAndSchedule(_ event: Event) -> Timeline.Offer {
        sentBackState.withLock { s -> Timeline.Offer in
            if let refused = sentBackJournal.append(event.serializedBytes) {
                s.pending -= 1
                return .unstorable(reason: refused.reason, permanent: refused.permanent)
            }
            if s.held != nil { s.held!.append(event) } else { scheduleSentBack([event], pending: 1) }
            return .accepted(nil)
        }
    }

    /// Runs journaled events through the pipeline on the sent-back queue, then crosses them off
    /// (`pending` of them count against the queue's bound). Called under `sentBackState`'s lock.
    private func scheduleSentBack(_ events: [Event], pending: Int) {
        sentBack.async { [self] in
            for event in events { _ = timeline.process(event) }
            let idle = sentBackState.withLock { s -> Bool in
                s.pending -= pending
                return s.pending == 0
            }
            sentBackJournal.ran(events.count, idle: idle)
        }
    }

    /// Waits until the events sent back so far went through the pipeline (not from that queue).
    private func drainSentBack() {
        if DispatchQueue.getSpecific(key: sentBackKey) == nil { sentBack.sync {} }
    }

    /// A message as the pipeline takes it: user state applied (device mode) or its own ids
    /// required (server mode), ids and defaults filled, validated.
    private func prepare(payload: JSONObject) throws(EventError) -> Event {
        var event = try Event(payload: payload)
        if let user {
            // An identify or alias read from input is that call: it changes who the user is.
            if event.type == .identify || event.type == .alias, let newId = event.userId, !newId.isEmpty {
                let traits = event.type == .identify ? event.traits : [:]
                user.withLock { state in
                    state.userId = newId
                    state.traits.merge(traits)
                }
                persistUser()
            }
            if event.userId == nil, let userId = self.userId { event.userId = userId }
            if event.anonymousId == nil { event.anonymousId = anonymousId }
        } else {
            try event.requireOwnIds()
        }
        if event.messageId == nil { event.messageId = MessageID.make() }
        if event.timestamp == nil { event.timestamp = ISOTimestamp.now() }
        if event.payload["integrations"] == nil { event.payload["integrations"] = [:] }
        try event.validate()
        return event
    }

    // MARK: Reset, flush, shutdown

    /// Forgets the user: clears userId and traits, picks a new anonymousId, and resets every
    /// plugin (server mode has no user: only the plugins). Source middleware sees the reset first
    /// and may stop it.
    ///
    /// From inside the pipeline (a plugin's hook) the plugins' reset runs later, as a library's does.
    public func reset() {
        if PipelineThread.isInside { resetUserNowAndPluginsLater(); return }
        guard timeline.allows(.reset) else { return }
        user?.withLock { state in
            state.userId = nil
            state.traits = [:]
            state.anonymousId = MessageID.make()
        }
        persistUser()
        timeline.reset()
    }

    /// `AH_EXT_CLIENT.reset`: the user is reset before returning (so the next event carries the
    /// new identity); the plugins' reset runs later on another thread, never inside the caller's
    /// call (a library asks from inside its own hooks). Source middleware may stop it, as for `reset()`.
    func resetUserNowAndPluginsLater() {
        guard timeline.allows(.reset) else { return }
        user?.withLock { state in
            state.userId = nil
            state.traits = [:]
            state.anonymousId = MessageID.make()
        }
        persistUser()
        DispatchQueue.global().async { [self] in timeline.reset() }
    }

    /// True once `shutdown()` began: libraries can no longer add timeline plugins.
    var isStopping: Bool { stopped.withLock { $0 } }

    /// Flushes every plugin and waits (at most `flushTimeout`) until every destination has drained.
    /// Source middleware sees the flush first and may stop it.
    ///
    /// From inside the pipeline (a plugin's hook) the flush starts on another thread and this
    /// returns false at once: waiting there could wait on the caller's own destination.
    @discardableResult
    public func flush() -> Bool {
        if PipelineThread.isInside {
            DispatchQueue.global().async { [self] in _ = flush() }
            return false
        }
        userWriter.flush()
        guard timeline.allows(.flush) else { return true }
        drainSentBack()
        return timeline.flush(timeout: configuration.flushTimeout)
    }

    /// Flushes with a bounded wait, then stops every destination and plugin: loaded libraries
    /// first (they may still send events), Segment.io last. A destination that does not finish
    /// within `hookTimeout` is abandoned and reported. Later calls are ignored. Returns false if
    /// something did not finish in time.
    @discardableResult
    public func shutdown() -> Bool {
        let already = stopped.withLock { s -> Bool in defer { s = true }; return s }
        if already { return true }
        refresher.withLock { $0 }?.stop()
        announceTermination()
        drainSentBack()
        // Producers stop first; what they send while stopping is run through the pipeline before
        // the destinations it goes to stop (`final`: then no more is taken).
        let stoppedInTime = timeline.shutdown(timeout: configuration.flushTimeout, hookTimeout: configuration.hookTimeout) { final in
            if final { sentBackState.withLock { $0.accepting = false } }
            drainSentBack()
        }
        sentBackJournal.close()
        // After the libraries stopped: what they sent through a second client goes out too.
        let secondStopped = secondClients.shutdown()
        // The libraries stopped: the count of their last suppressed log lines, now.
        // (A timer that took a count meanwhile prints it before this goes on.)
        for (key, rate) in libraryLogRates.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            rate.saySuppressed { count in log(.warning, "\(key): \(LibraryOutput.suppressedText(count, what: "log lines"))") }
        }
        persistUser()
        userWriter.flush()
        removeMemoryStorage()
        return stoppedInTime && secondStopped
    }

    // MARK: Lifecycle

    /// "Application Installed" on the first run, "Application Updated" when the version or build
    /// changed, then "Application Opened", as analytics-swift does on iOS.
    private func trackLaunch(previous: UserState?) {
        let version = configuration.application?.version ?? ""
        let build = configuration.application?.build ?? ""
        if previous == nil {
            track("Application Installed", properties: ["version": .string(version), "build": .string(build)])
        } else if let p = previous, (p.appVersion ?? "") != version || (p.appBuild ?? "") != build {
            track("Application Updated", properties: [
                "version": .string(version), "build": .string(build),
                "previous_version": .string(p.appVersion ?? ""), "previous_build": .string(p.appBuild ?? ""),
            ])
        }
        track("Application Opened", properties: ["version": .string(version), "build": .string(build), "from_background": false])
        user?.withLock { $0.appVersion = version; $0.appBuild = build }
        persistUser()
    }
}
