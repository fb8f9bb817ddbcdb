import Foundation
import Glibc
import Synchronization

/// A client's signals: the breadcrumbs an app leaves (navigation, interactions, network traffic,
/// local data, its own analytics calls, anything user-defined) on their way to the JavaScript
/// event generators of LivePlugins and to the broadcasters.
///
/// `emit` may be called from any thread. It stamps the signal (anonymousId, timestamp, a
/// sequential index, context) and queues it; one signals thread then hands each signal, in index
/// order, to every broadcaster and every subscriber. A subscriber that is not ready yet (a runtime
/// still loading its bundle) finds the signals emitted meanwhile replayed in order once it is,
/// at most `maximumBufferSize` of them: older ones are shed and counted, so memory stays bounded
/// however many signals arrive. Signals emitted before anything subscribed wait the same way for
/// the first subscriber.
///
/// As a plugin at the end of the client's timeline, it turns every event into an
/// instrumentation signal, except events that signal processing made (``SignalsOrigin``).
public final class Signals: EventPlugin, @unchecked Sendable {
    public let type = PluginType.after

    enum Item {
        case signal(Signal)
        case subscribe(SignalSubscriber)
        case ready(UInt64, Bool)
        case unsubscribe(UInt64)
        case flush(DispatchGroup, Double)
        case broadcasters([SignalBroadcaster])
    }

    private let writeKey: String
    private let log: @Sendable (LogLevel, String) -> Void
    private let report: @Sendable (AnalyticsError) -> Void
    private let context: JSONObject
    private let client = Locked(WeakAnalytics())

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var configuration: SignalsConfiguration
    private var queue = RingBuffer<Item>()
    private var queuedSignals = 0
    private var nextIndex = 0
    private var nextSubscriberId: UInt64 = 1
    private var counters = SignalsStats()
    private var stopping = false
    private var consumerWaiting = false
    private var lastBroadcastersSetting: JSON?
    private var registry: [UInt64: SignalSubscriber] = [:]
    /// pthread_self() of the signals thread, to recognise calls made from inside a delivery.
    private let signalsThread = Atomic<UInt>(0)

    // Only on the signals thread.
    private var broadcasters: [SignalBroadcaster]
    private var subscribers: [SignalSubscriber] = []
    private var early = RingBuffer<Signal>()
    private var earlyShed = 0
    private var everSubscribed = false
    private var sinceRelay = 0
    private var lastRelay = monotonicSeconds()

    private let finished = DispatchSemaphore(value: 0)

    /// A client makes its own from `Configuration.signals` (``Analytics/signals``); a standalone
    /// one (no client: anonymousId empty, no instrumentation) is useful on its own too.
    /// `settings`: applied at once (their problems are reported by the first ``update(settings:type:)``),
    /// so that libraries created with the client already see the configuration in force.
    public init(configuration: SignalsConfiguration, settings: Settings? = nil, writeKey: String = "",
                application: ApplicationInfo? = nil,
                log: @escaping @Sendable (LogLevel, String) -> Void = { _, _ in },
                report: @escaping @Sendable (AnalyticsError) -> Void = { _ in }) {
        var configuration = configuration
        if let settings {
            configuration = configuration.applying(settings: settings, log: log).configuration
            lastBroadcastersSetting = settings.json["signals"]?["broadcasters"]
        }
        self.configuration = configuration
        self.writeKey = writeKey
        self.log = log
        self.report = report
        var context: JSONObject = [:]
        if let app = application {
            context["app"] = ["name": .string(app.name), "version": .string(app.version), "build": .string(app.build)]
        }
        context["library"] = ["name": .string(SystemContext.libraryName), "version": .string(SystemContext.libraryVersion)]
        self.context = context
        broadcasters = configuration.broadcasters
        for b in broadcasters { b.attach(environment(configuration)) }
        let thread = Thread { [self] in run() }
        thread.name = "signals"
        thread.start()
    }

    private func environment(_ c: SignalsConfiguration) -> SignalBroadcastEnvironment {
        SignalBroadcastEnvironment(writeKey: writeKey, debugMode: c.debugMode, obfuscate: c.obfuscateBroadcasts,
                                   relayCount: c.relayCount, log: log, report: report)
    }

    /// The configuration in force (settings may have changed it).
    public var currentConfiguration: SignalsConfiguration { condition.lock(); defer { condition.unlock() }; return configuration }

    public var stats: SignalsStats { condition.lock(); defer { condition.unlock() }; return counters }

    /// The index the next signal will get.
    public var nextSignalIndex: Int { condition.lock(); defer { condition.unlock() }; return nextIndex }

    // MARK: Emitting

    /// Emits a typed signal (``NavigationSignal``, ``InteractionSignal``, …, ``UserDefinedSignal``
    /// or any ``RawSignal`` of the app's). Returns the stamped signal, or nil once the client stopped.
    @discardableResult
    public func emit(_ raw: some RawSignal) -> Signal? {
        enqueue(type: raw.signalType, data: raw.signalData, timestamp: nil, anonymousId: nil)
    }

    /// Emits a user-defined signal whose `data` is the app's own object.
    @discardableResult
    public func emit(userDefined data: JSONObject) -> Signal? {
        enqueue(type: .userDefined, data: data, timestamp: nil, anonymousId: nil)
    }

    /// Emits a user-defined signal from any Encodable value (it must encode as an object).
    @discardableResult
    public func emit(encoding value: some Encodable) throws -> Signal? {
        let json = try JSON(parsing: JSONEncoder().encode(value))
        guard case .object(let o) = json else { throw SignalError("a user-defined signal's data must encode as an object, found \(JSON.kindName(json))") }
        return emit(userDefined: o)
    }

    /// Emits a signal given as JSON (`{type, data, timestamp?, anonymousId?}`), after checking
    /// its documented fields; the error says what is wrong.
    @discardableResult
    public func emit(json: JSONObject) throws(SignalError) -> Signal? {
        let input = try SignalInput(json: json)
        return enqueue(type: input.signalType, data: input.signalData, timestamp: input.timestamp, anonymousId: input.anonymousId)
    }

    private func enqueue(type: SignalType, data: JSONObject, timestamp: String?, anonymousId: String?) -> Signal? {
        let anonymousId = anonymousId ?? client.withLock { $0.value }?.anonymousId ?? ""
        let timestamp = timestamp ?? ISOTimestamp.now()
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return nil }
        let capacity = max(1, configuration.dispatchQueueCapacity)
        if queuedSignals >= capacity, case .wait(let limit) = configuration.overflow {
            let deadline = Date(timeIntervalSinceNow: limit)
            if consumerWaiting { condition.broadcast() }
            while queuedSignals >= capacity && !stopping && Date() < deadline { _ = condition.wait(until: deadline) }
            guard !stopping else { return nil }
        }
        if queuedSignals >= capacity {
            // Shed the oldest queued signal (control items stay).
            let isSignal: (Item) -> Bool = { if case .signal = $0 { return true }; return false }
            let removed = queue.first.map(isSignal) == true ? queue.removeFirst() : queue.removeFirst(where: isSignal)
            if removed != nil {
                queuedSignals -= 1
                counters.shedQueueFull += 1
                if counters.shedQueueFull == 1 || counters.shedQueueFull % 10_000 == 0 {
                    report(.plugin(name: "Signals", message: "dispatch queue full (\(capacity) signals): \(counters.shedQueueFull) oldest shed so far"))
                }
            }
        }
        let signal = Signal(anonymousId: anonymousId, type: type, timestamp: timestamp, index: nextIndex, context: context, data: data)
        nextIndex += 1
        counters.emitted += 1
        queue.append(.signal(signal))
        queuedSignals += 1
        if consumerWaiting { condition.signal() }
        return signal
    }

    /// Delivers a signal stamped elsewhere as it is (index, timestamp and context kept): the
    /// host's signals, fed to the subscribers of a library in `analytics-plugin-runner`. False
    /// once stopped.
    @discardableResult
    func relay(_ signal: Signal) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        counters.emitted += 1
        queue.append(.signal(signal))
        queuedSignals += 1
        if consumerWaiting { condition.signal() }
        return true
    }

    // MARK: Subscribers

    /// Adds a receiver of every signal as JSON text, called on the signals thread, one signal at a
    /// time, in index order. `ready: false` holds signals (bounded, replayed in order) until
    /// ``setReady(_:_:)``. The first subscriber also receives the signals emitted before it.
    /// Returns its id; `release` runs once it is unsubscribed (see ``unsubscribe(_:)``) or at shutdown.
    @discardableResult
    public func subscribe(name: String, ready: Bool = true,
                          release: (@Sendable () -> Void)? = nil,
                          _ deliver: @escaping @Sendable (_ json: [UInt8], _ signal: Signal) -> Void) -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return nil }
        let id = nextSubscriberId
        nextSubscriberId += 1
        let subscriber = SignalSubscriber(id: id, name: name, ready: ready, deliver: deliver, release: release)
        registry[id] = subscriber
        queue.append(.subscribe(subscriber))
        if consumerWaiting { condition.signal() }
        return id
    }

    /// Ready: the held signals are delivered in order, then every new one. Not ready: new signals
    /// are held again (e.g. while a new bundle loads). False for an unknown id.
    public func setReady(_ id: UInt64, _ ready: Bool) { control(.ready(id, ready)) }

    /// Stops deliveries to a subscriber: none starts after this returns (a delivery in progress
    /// on another thread is waited for; called from inside its own delivery, that one finishes).
    /// Its `release` has run when this returns (called from inside its own delivery: once that
    /// delivery finishes, on the signals thread). False for an unknown id.
    @discardableResult
    public func unsubscribe(_ id: UInt64) -> Bool {
        condition.lock()
        let subscriber = registry.removeValue(forKey: id)
        condition.unlock()
        guard let subscriber else { return false }
        if signalsThread.load(ordering: .relaxed) == UInt(pthread_self()) {
            // From inside its own delivery: release once the signals thread is past it.
            subscriber.removed = true
        } else {
            subscriber.gate.lock()
            subscriber.removed = true
            subscriber.gate.unlock()
            // No delivery runs or will run: release now, so that it precedes the caller's next
            // step (a library's `destroy` frees what `release` needs).
            subscriber.releaseOnce()
        }
        condition.lock()
        defer { condition.unlock() }
        queue.append(.unsubscribe(id))
        if consumerWaiting { condition.signal() }
        return true
    }

    /// True while a subscriber with this id exists.
    public func hasSubscriber(_ id: UInt64) -> Bool { condition.lock(); defer { condition.unlock() }; return registry[id] != nil }

    private func control(_ item: Item) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return }
        queue.append(item)
        if consumerWaiting { condition.signal() }
    }

    // MARK: Plugin

    public func configure(analytics: Analytics) {
        client.withLock { $0 = WeakAnalytics(analytics) }
    }

    /// Every event becomes an instrumentation signal, unless signal processing made it.
    public func execute(_ event: Event) -> Event? {
        if SignalsOrigin.isFromSignals(event) {
            condition.lock(); counters.loopGuarded += 1; condition.unlock()
            return event
        }
        if enqueue(type: .instrumentation, data: InstrumentationSignal(event: event).signalData, timestamp: nil, anonymousId: event.anonymousId) != nil {
            condition.lock(); counters.instrumented += 1; condition.unlock()
        }
        return event
    }

    /// Settings may carry a `"signals"` object (see ``SignalsConfiguration/applying(settings:log:)``).
    public func update(settings: Settings, type: UpdateType) {
        condition.lock()
        let (updated, problems) = configuration.applying(settings: settings, log: log)
        let setting = settings.json["signals"]?["broadcasters"]
        let replace = setting != nil && setting != lastBroadcastersSetting && problems.allSatisfy { !$0.hasPrefix("signals.broadcasters") }
        var kept = updated
        if !replace { kept.broadcasters = configuration.broadcasters } else { lastBroadcastersSetting = setting }
        configuration = kept
        if replace && !stopping {
            queue.append(.broadcasters(kept.broadcasters))
            if consumerWaiting { condition.signal() }
        }
        condition.unlock()
        for p in problems { report(.settings(p)) }
    }

    /// Relays every broadcaster now and waits (bounded by `timeout`) until every signal emitted
    /// before the call was dispatched and what the broadcasters relayed was sent.
    @discardableResult
    public func flush(timeout: Double) -> Bool {
        let group = DispatchGroup()
        group.enter()
        condition.lock()
        guard !stopping else { condition.unlock(); return true }
        queue.append(.flush(group, timeout))
        if consumerWaiting { condition.signal() }
        condition.unlock()
        return group.wait(timeout: .now() + timeout + 0.5) == .success
    }

    public func flush() { flush(timeout: 10) }

    /// Dispatches what is queued, flushes the broadcasters, releases the subscribers and stops.
    public func shutdown() {
        _ = flush(timeout: 5)
        condition.lock()
        let already = stopping
        stopping = true
        condition.broadcast()
        condition.unlock()
        if !already { _ = finished.wait(timeout: .now() + 10) }
    }

    // MARK: The signals thread

    private func run() {
        signalsThread.store(UInt(pthread_self()), ordering: .relaxed)
        var items: [Item] = []
        while true {
            condition.lock()
            let interval = configuration.relayInterval
            while queue.isEmpty && !stopping {
                let deadline = lastRelay + interval
                let wait = deadline - monotonicSeconds()
                if wait <= 0 { break }
                consumerWaiting = true
                _ = condition.wait(until: Date(timeIntervalSinceNow: wait))
                consumerWaiting = false
            }
            if queue.isEmpty && stopping {
                condition.unlock()
                break
            }
            queue.drain(into: &items)
            queuedSignals = 0
            let config = configuration
            condition.broadcast()  // producers waiting for room
            condition.unlock()

            var dispatched = 0, delivered = 0, shed = 0, relays = 0
            func publish() {
                condition.lock()
                counters.dispatched += dispatched
                counters.delivered += delivered
                counters.shedBeforeReady += shed
                counters.relays += relays
                condition.unlock()
                dispatched = 0; delivered = 0; shed = 0; relays = 0
            }
            for item in items {
                switch item {
                case .signal(let signal):
                    dispatched += 1
                    delivered += dispatch(signal, limit: config.maximumBufferSize, shed: &shed)
                    sinceRelay += 1
                    if sinceRelay >= config.relayCount { relay(); relays += 1 }
                case .subscribe(let s):
                    if !everSubscribed {
                        everSubscribed = true
                        s.pending = early
                        s.shed = earlyShed
                        early = RingBuffer()
                        earlyShed = 0
                    }
                    subscribers.append(s)
                    if s.ready { delivered += replay(s) }
                case .ready(let id, let ready):
                    guard let s = subscribers.first(where: { $0.id == id }) else {
                        report(.plugin(name: "Signals", message: "no subscriber with id \(id)"))
                        continue
                    }
                    s.ready = ready
                    if ready { delivered += replay(s) }
                case .unsubscribe(let id):
                    if let i = subscribers.firstIndex(where: { $0.id == id }) {
                        let s = subscribers.remove(at: i)
                        s.releaseOnce()
                    }
                case .flush(let group, let timeout):
                    relay(); relays += 1
                    let deadline = monotonicSeconds() + timeout
                    for b in broadcasters { _ = b.flush(timeout: max(0.01, deadline - monotonicSeconds())) }
                    publish()
                    group.leave()
                case .broadcasters(let replacement):
                    relay(); relays += 1
                    for b in broadcasters where !replacement.contains(where: { $0 === b }) { _ = b.flush(timeout: 2); b.shutdown() }
                    for b in replacement where !broadcasters.contains(where: { $0 === b }) { b.attach(environment(config)) }
                    broadcasters = replacement
                }
            }
            items.removeAll(keepingCapacity: items.capacity <= 4096)
            if monotonicSeconds() - lastRelay >= config.relayInterval { relay(); relays += 1 }
            publish()
        }
        for b in broadcasters { b.shutdown() }
        for s in subscribers { s.releaseOnce() }
        subscribers.removeAll()
        condition.lock(); registry.removeAll(); condition.unlock()
        finished.signal()
    }

    /// One signal to every broadcaster and subscriber; returns the deliveries made.
    private func dispatch(_ signal: Signal, limit: Int, shed: inout Int) -> Int {
        for b in broadcasters { b.added(signal) }
        if !everSubscribed {
            early.append(signal)
            if early.count > limit { early.removeFirst(); earlyShed += 1; shed += 1 }
            return 0
        }
        var delivered = 0
        var json: [UInt8]?
        for s in subscribers {
            if s.ready {
                if json == nil { json = signal.serializedBytes }
                if s.send(json!, signal) { delivered += 1 }
            } else {
                s.pending.append(signal)
                if s.pending.count > limit { s.pending.removeFirst(); s.shed += 1; shed += 1 }
            }
        }
        return delivered
    }

    /// Delivers what a subscriber holds, in order, and says what was shed while it waited.
    private func replay(_ s: SignalSubscriber) -> Int {
        if s.shed > 0 {
            report(.plugin(name: "Signals", message: "\(s.shed) signals emitted before \(s.name) was ready were shed (it keeps the newest \(currentConfiguration.maximumBufferSize))"))
            s.shed = 0
        }
        var n = 0
        while let signal = s.pending.removeFirst() {
            if s.send(signal.serializedBytes, signal) { n += 1 }
        }
        return n
    }

    private func relay() {
        sinceRelay = 0
        lastRelay = monotonicSeconds()
        for b in broadcasters { b.relay() }
    }
}

/// What a client's signals did, for tests, the run summary and the benchmark.
public struct SignalsStats: Sendable, Equatable {
    /// Signals accepted by `emit` (each got an index).
    public var emitted = 0
    /// Signals the signals thread handed to broadcasters and subscribers.
    public var dispatched = 0
    /// Oldest signals shed because the dispatch queue was full.
    public var shedQueueFull = 0
    /// Oldest signals shed while waiting for a runtime (a subscriber not ready yet).
    public var shedBeforeReady = 0
    /// Deliveries to subscribers (one per signal per subscriber).
    public var delivered = 0
    /// Events that became instrumentation signals, and those skipped because signal processing
    /// made them (the loop guard).
    public var instrumented = 0
    public var loopGuarded = 0
    /// Relays of the broadcasters (by count, interval or flush).
    public var relays = 0
}
