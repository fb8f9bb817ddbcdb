import Foundation

/// The vendor-specific half of an ``UploadQueue``: how a batch becomes the vendor's request and
/// what the vendor's answer means for each event. The rest — gathering events across calls,
/// requests in flight, answering held calls, passing Retry-After to the host — is the same for
/// every vendor, so it lives in the queue.
public protocol UploadVendor: Sendable {
    /// One event as the vendor's request carries it (e.g. its encoded JSON).
    associatedtype Item: Sendable
    /// Where requests go and how (URL, key, timeout). Copied into a batch when the batch is
    /// formed, so new settings apply to later batches and never change one half sent.
    associatedtype Target: Sendable

    /// Starts the reasons the queue writes itself ("PostHog: could not start …").
    var name: String { get }

    /// The HTTP request that uploads `batch`.
    func request(for batch: UploadBatch<Item, Target>) -> HostHTTP.Request

    /// What the vendor's answer (or its absence) means for each event of `batch`.
    func outcome(of answer: HostHTTP.Answer, for batch: UploadBatch<Item, Target>) -> UploadOutcome
}

/// Events that travel in one request, oldest first.
public struct UploadBatch<Item: Sendable, Target: Sendable>: Sendable {
    public let items: [Item]
    /// The settings when the batch was formed.
    public let target: Target
}

/// What a vendor's answer means for a batch's events.
public enum UploadOutcome: Sendable {
    /// The same answer for every event.
    case all(Result<Void, IntegrationError>)
    /// One answer per event, in the batch's order (an event given none is answered retryable:
    /// never silently OK).
    case each([Result<Void, IntegrationError>])
    /// The vendor refused the whole request for what one event may have caused (e.g. 400, 413):
    /// the batch goes again in two halves, ahead of anything else, until the bad event is alone
    /// and answered on its own, so one bad event never takes the others down. A batch of one
    /// event cannot be split: it is then refused for good.
    case split
}

/// Batches events across hook calls and uploads them through the host's HTTP requests (ABI 1.3),
/// answering each call's ``Completion`` only when the vendor answered the request that carried
/// its event: nothing is answered OK while it is merely held here.
///
/// - Events are held in groups by `key`: events with different keys never share a request (GA4:
///   one client per request), events of one key travel together whatever arrived between them
///   (a server's traffic interleaves many users). A group goes as a request once it holds
///   `maxEvents` events or `maxBytes` (sizes plus one separator byte per event); at most
///   `maxInFlight` requests run at once (the host's bound caps it), started oldest first.
/// - A group that is not full goes: without `maxWait`, when no request runs (nothing waits idle:
///   requests stay large when calls come faster than answers, and no timer is needed); with
///   `maxWait`, once its oldest event waited that long (a timer sees to it when no call comes),
///   so groups of many users fill. Everything held goes at a flush, before the host's bound on
///   pending calls would stop the hooks (oldest groups first), and at once when the host cannot
///   finish calls later.
/// - Events with the same `orderKey` travel in requests that run one after the other, in the
///   order they were held (a person's events for a vendor that applies them in arrival order):
///   a request waits while one holding any of its order keys runs or waits before it; requests
///   without shared order keys run side by side.
/// - A 429 or 503 with a numeric Retry-After is passed to the host (`AH_EXT_RETRY_AFTER`) before
///   the calls are answered, so the host's next retry waits as long as the vendor asked.
public final class UploadQueue<Vendor: UploadVendor>: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`; answers arrive on host threads.
    public typealias Batch = UploadBatch<Vendor.Item, Vendor.Target>

    /// The vendor's request limits.
    public struct Limits: Sendable {
        public var maxEvents: Int
        public var maxBytes: Int
        /// Requests at once; the host's own bound per instance caps it.
        public var maxInFlight: Int
        /// Seconds a group that is not full may wait for more events of its key; nil: it goes as
        /// soon as no request runs.
        public var maxWait: Double?

        public init(maxEvents: Int, maxBytes: Int, maxInFlight: Int = 4, maxWait: Double? = nil) {
            self.maxEvents = max(1, maxEvents)
            self.maxBytes = max(1, maxBytes)
            self.maxInFlight = max(1, maxInFlight)
            self.maxWait = maxWait.map { max(0.001, $0) }
        }
    }

    private struct Entry: Sendable {
        let item: Vendor.Item
        let size: Int
        let orderKey: String?
        let completion: Completion
    }

    /// The held events of one key, oldest first.
    private struct Group {
        var entries: [Entry] = []
        var bytes = 0
        /// Changes each time the group empties, so a stale place in `arrivals` is recognised.
        var generation = 0
        var since = 0.0
    }

    private struct Upload: Sendable {
        let target: Vendor.Target
        let entries: [Entry]
        /// Its events' order keys.
        let orderKeys: Set<String>
        var batch: Batch { Batch(items: entries.map(\.item), target: target) }

        init(target: Vendor.Target, entries: [Entry]) {
            self.target = target
            self.entries = entries
            var keys: Set<String> = []
            for entry in entries { if let key = entry.orderKey { keys.insert(key) } }
            orderKeys = keys
        }
    }

    public let vendor: Vendor
    public let limits: Limits
    /// Requests at once: the vendor's limit within the host's bound.
    public let maxInFlight: Int
    private let http: HostHTTP
    private let host: IntegrationHost
    /// The host's bound on pending calls: held events go before it would stop the hooks.
    private let maxPending: Int
    private let lock = NSLock()
    private var target: Vendor.Target
    private var groups: [String: Group] = [:]
    /// The groups in the order their oldest held event arrived (key, generation); entries whose
    /// generation is no longer the group's are skipped. `arrivalsHead` is the first live one.
    private var arrivals: [(key: String, generation: Int)] = []
    private var arrivalsHead = 0
    /// Events held in `groups`.
    private var heldCount = 0
    private var queued: [Upload] = []
    private var queuedHead = 0
    /// Requests started and not yet answered.
    private var running = 0
    /// Order keys of the running requests.
    private var runningKeys: Set<String> = []
    private var timerArmed = false

    public init(vendor: Vendor, target: Vendor.Target, limits: Limits, http: HostHTTP, host: IntegrationHost) {
        self.vendor = vendor
        self.target = target
        self.limits = limits
        self.http = http
        self.host = host
        maxPending = max(1, host.maxPending ?? 1)
        maxInFlight = max(1, min(limits.maxInFlight, http.maxInFlight))
    }

    /// New settings for the batches formed from now on.
    public func retarget(_ target: Vendor.Target) {
        lock.lock()
        self.target = target
        lock.unlock()
    }

    /// Holds one call's event until its request is answered, then answers `completion`.
    /// `size`: the event's encoded bytes; `key`: events with different keys never share a
    /// request; `orderKey`: its request runs after every earlier one holding the same order key
    /// was answered. When the host cannot finish the call later, the event goes at once (the hook
    /// waits for this answer).
    public func hold(_ item: Vendor.Item, size: Int, key: String = "", orderKey: String? = nil, completion: Completion) {
        let entry = Entry(item: item, size: size, orderKey: orderKey, completion: completion)
        let now = limits.maxWait == nil ? 0 : monotonicNow()
        lock.lock()
        var group = groups.removeValue(forKey: key) ?? Group()
        // Past the byte limit with this event: what the group holds goes first.
        if !group.entries.isEmpty, group.bytes + size + 1 > limits.maxBytes {
            take(&group, key: key)
        }
        if group.entries.isEmpty {
            group.since = now
            arrivals.append((key, group.generation))
        }
        group.entries.append(entry)
        group.bytes += size + 1
        heldCount += 1
        if group.entries.count >= limits.maxEvents || group.bytes >= limits.maxBytes {
            take(&group, key: key)
        }
        groups[key] = group
        if !completion.mayFinishLater {
            queueAll()
        } else if heldCount >= maxPending {
            // The host stops calling at its bound: the oldest groups go until half of it is free.
            queueOldest(untilHeld: maxPending / 2)
        } else if let wait = limits.maxWait {
            queueWaited(now: now, wait: wait)
        } else if running == 0 {
            queueAll()
        }
        let starting = startable()
        let arm = needsTimer()
        lock.unlock()
        if arm { armTimer() }
        for upload in starting { send(upload) }
    }

    /// Uploads everything held now (a flush: the host then waits for the answers).
    public func flush() {
        lock.lock()
        queueAll()
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    // MARK: Forming requests (under `lock`)

    /// Moves a group's events into a queued request; the group is then empty (a new generation).
    private func take(_ group: inout Group, key: String) {
        guard !group.entries.isEmpty else { return }
        queued.append(Upload(target: target, entries: group.entries))
        heldCount -= group.entries.count
        group.entries = []
        group.bytes = 0
        group.generation &+= 1
    }

    /// The oldest live group's key, dropping stale places on the way.
    private func oldestKey() -> String? {
        while arrivalsHead < arrivals.count {
            let (key, generation) = arrivals[arrivalsHead]
            if let group = groups[key], group.generation == generation, !group.entries.isEmpty { return key }
            arrivalsHead += 1
        }
        arrivals.removeAll(keepingCapacity: true)
        arrivalsHead = 0
        return nil
    }

    private func takeOldest() {
        guard let key = oldestKey(), var group = groups.removeValue(forKey: key) else { return }
        arrivalsHead += 1
        take(&group, key: key)
        groups[key] = group
    }

    private func queueAll() {
        while heldCount > 0, oldestKey() != nil { takeOldest() }
        if heldCount == 0 { compact() }
    }

    private func queueOldest(untilHeld bound: Int) {
        while heldCount > bound, oldestKey() != nil { takeOldest() }
        compact()
    }

    private func queueWaited(now: Double, wait: Double) {
        while let key = oldestKey(), let group = groups[key], now - group.since >= wait { takeOldest() }
        compact()
    }

    /// Forgets empty groups and consumed places once they pile up (keeps memory bounded by what
    /// is held, not by every key ever seen).
    private func compact() {
        if arrivalsHead > 1024, arrivalsHead * 2 > arrivals.count {
            arrivals.removeFirst(arrivalsHead)
            arrivalsHead = 0
        }
        if groups.count > 4 * max(heldCount, 256) {
            groups = groups.filter { !$0.value.entries.isEmpty }
            // Generations restart for new groups; stale places of removed keys must go too.
            arrivals = arrivals[arrivalsHead...].filter { groups[$0.key]?.generation == $0.generation }
            arrivalsHead = 0
        }
    }

    /// The queued uploads that may start now, oldest first, counted as running. An upload that
    /// shares an order key with a running one, or with one waiting before it, waits; others may
    /// pass it.
    private func startable() -> [Upload] {
        var starting: [Upload] = []
        var index = queuedHead
        var blocked: Set<String> = []
        while index < queued.count, running < maxInFlight {
            let next = queued[index]
            if !next.orderKeys.isEmpty, !next.orderKeys.isDisjoint(with: runningKeys) || !next.orderKeys.isDisjoint(with: blocked) {
                blocked.formUnion(next.orderKeys)
                index += 1
                continue
            }
            if index == queuedHead {
                queuedHead += 1
                index += 1
            } else {
                queued.remove(at: index)
            }
            running += 1
            runningKeys.formUnion(next.orderKeys)
            starting.append(next)
        }
        if queuedHead == queued.count {
            queued.removeAll(keepingCapacity: true)
            queuedHead = 0
        } else if queuedHead > 256, queuedHead * 2 > queued.count {
            queued.removeFirst(queuedHead)
            queuedHead = 0
        }
        return starting
    }

    // MARK: The bounded wait

    private func needsTimer() -> Bool {
        guard limits.maxWait != nil, !timerArmed, heldCount > 0 else { return false }
        timerArmed = true
        return true
    }

    /// Wakes once the oldest held group has waited `maxWait` (no call may come to send it).
    private func armTimer() {
        guard let wait = limits.maxWait else { return }
        lock.lock()
        let since = oldestKey().flatMap { groups[$0]?.since } ?? monotonicNow()
        lock.unlock()
        let delay = max(0.001, since + wait - monotonicNow())
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in self?.timerFired() }
    }

    private func timerFired() {
        guard let wait = limits.maxWait else { return }
        lock.lock()
        timerArmed = false
        queueWaited(now: monotonicNow(), wait: wait)
        let starting = startable()
        let arm = needsTimer()
        lock.unlock()
        if arm { armTimer() }
        for upload in starting { send(upload) }
    }

    private func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    // MARK: Requests

    /// A request ended: halves of a split go first; without `maxWait`, what is held goes when
    /// nothing else runs; then what may start.
    private func ended(_ upload: Upload, requeue: [Upload] = []) {
        lock.lock()
        running -= 1
        runningKeys.subtract(upload.orderKeys)
        if !requeue.isEmpty { queued.insert(contentsOf: requeue, at: queuedHead) }
        if limits.maxWait == nil, running == 0, queuedHead == queued.count, heldCount > 0 { queueAll() }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    private func send(_ upload: Upload) {
        let request = vendor.request(for: upload.batch)
        do {
            try http.start(request) { [self] answer in answered(upload, answer) }
        } catch {
            // Not started (the host is stopping, or the request is malformed): answered now.
            for entry in upload.entries { entry.completion.fail(IntegrationError.retryable("\(vendor.name): \(error.message)")) }
            ended(upload)
        }
    }

    private func answered(_ upload: Upload, _ answer: HostHTTP.Answer) {
        // The host hears the vendor's wait before the calls are answered retryable.
        if case .response(let status, _, _) = answer, status == 429 || status == 503, let seconds = answer.retryAfterSeconds {
            host.retryAfter(seconds: seconds)
        }
        var halves: [Upload] = []
        switch vendor.outcome(of: answer, for: upload.batch) {
        case .all(let result):
            for entry in upload.entries { entry.completion.finish(result) }
        case .each(let results):
            for (n, entry) in upload.entries.enumerated() {
                entry.completion.finish(n < results.count ? results[n]
                                        : .failure(.retryable("\(vendor.name): the integration gave no answer for this event")))
            }
        case .split where upload.entries.count > 1:
            let half = upload.entries.count / 2
            halves = [Upload(target: upload.target, entries: Array(upload.entries[..<half])),
                      Upload(target: upload.target, entries: Array(upload.entries[half...]))]
        case .split:
            upload.entries[0].completion.fail(IntegrationError.permanent("\(vendor.name): the request of this event alone was refused"))
        }
        ended(upload, requeue: halves)
    }
}
