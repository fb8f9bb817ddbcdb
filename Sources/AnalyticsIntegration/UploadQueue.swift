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
    /// It holds an exclusive event, so it runs alone (see ``UploadQueue/hold(_:size:key:exclusive:completion:)``).
    public let exclusive: Bool
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
/// - At most `maxInFlight` requests run at once (the host's bound caps it), each of at most
///   `maxEvents` events and `maxBytes` (sizes plus one separator byte per event). Events with
///   different `key`s never share a request (e.g. one user per request).
/// - An event goes at once when no request runs: nothing waits idle, so no timer is needed.
///   While requests run, what arrives gathers; a full request starts when there is room for it,
///   a partial one when the last running request ends (requests stay large when calls come
///   faster than answers). Held events go before the host's bound on pending calls would stop
///   the hooks, and at once when the host cannot finish calls later.
/// - An `exclusive` event's request runs alone: after every earlier request was answered and
///   before any later one starts (for vendors that must ingest it in order with the rest).
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

        public init(maxEvents: Int, maxBytes: Int, maxInFlight: Int = 4) {
            self.maxEvents = max(1, maxEvents)
            self.maxBytes = max(1, maxBytes)
            self.maxInFlight = max(1, maxInFlight)
        }
    }

    private struct Entry: Sendable {
        let item: Vendor.Item
        let size: Int
        let key: String
        let exclusive: Bool
        let completion: Completion
    }

    private struct Upload: Sendable {
        let target: Vendor.Target
        let entries: [Entry]
        var exclusive: Bool { entries.contains { $0.exclusive } }
        var batch: Batch { Batch(items: entries.map(\.item), target: target, exclusive: exclusive) }
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
    private var held: [Entry] = []
    /// Bytes of what is held (after a partial request stays held: that request's).
    private var heldBytes = 0
    private var queued: [Upload] = []
    /// Requests started and not yet answered; `exclusiveRunning`: one of them runs alone.
    private var running = 0
    private var exclusiveRunning = false

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
    /// request; `exclusive`: its request runs alone. When the host cannot finish the call later,
    /// the event goes at once (the hook waits for this answer).
    public func hold(_ item: Vendor.Item, size: Int, key: String = "", exclusive: Bool = false, completion: Completion) {
        let entry = Entry(item: item, size: size, key: key, exclusive: exclusive, completion: completion)
        lock.lock()
        held.append(entry)
        heldBytes += size + 1
        let all = !completion.mayFinishLater || running == 0 || held.count >= maxPending
        // A request is complete once full or once an event of another key follows it.
        let ready = all || held.count >= limits.maxEvents || heldBytes >= limits.maxBytes || held[0].key != key
        if ready { queueHeld(all: all) }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    /// Uploads everything held now (a flush: the host then waits for the answers).
    public func flush() {
        lock.lock()
        queueHeld(all: true)
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    /// Moves held events into requests (under `lock`); without `all`, a last request that is not
    /// full stays held to gather more.
    private func queueHeld(all: Bool) {
        var chunk: [Entry] = []
        var bytes = 0
        var taken = 0
        for entry in held {
            if let first = chunk.first,
               first.key != entry.key || chunk.count == limits.maxEvents || bytes + entry.size + 1 > limits.maxBytes {
                queued.append(Upload(target: target, entries: chunk))
                taken += chunk.count
                chunk = []
                bytes = 0
            }
            chunk.append(entry)
            bytes += entry.size + 1
        }
        if !chunk.isEmpty, all || chunk.count == limits.maxEvents || bytes >= limits.maxBytes {
            queued.append(Upload(target: target, entries: chunk))
            taken += chunk.count
            bytes = 0
        }
        held.removeFirst(taken)
        heldBytes = held.isEmpty ? 0 : bytes
    }

    /// The queued uploads that may start now, oldest first, counted as running (under `lock`).
    private func startable() -> [Upload] {
        var starting: [Upload] = []
        while let next = queued.first, running < maxInFlight, !exclusiveRunning, !next.exclusive || running == 0 {
            queued.removeFirst()
            running += 1
            exclusiveRunning = next.exclusive
            starting.append(next)
        }
        return starting
    }

    /// A request ended: halves of a split go first; a partial request held goes when nothing
    /// else runs; then what may start.
    private func ended(_ upload: Upload, requeue: [Upload] = []) {
        lock.lock()
        running -= 1
        if upload.exclusive { exclusiveRunning = false }
        queued.insert(contentsOf: requeue, at: 0)
        if running == 0, queued.isEmpty, !held.isEmpty { queueHeld(all: true) }
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
