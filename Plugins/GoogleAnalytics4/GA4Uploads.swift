import AnalyticsIntegration
import Foundation

/// Batches Measurement Protocol events across calls and sends them through the host's HTTP client
/// (ABI 1.3); each call is answered when GA4 answered the request that carried its event.
///
/// A request speaks for one user (`client_id` or `app_instance_id`, `user_id`,
/// `user_properties`), so consecutive events of the same user go together, at most 25 per request
/// (GA4's limit) and under 130 kB; each event carries its own `timestamp_micros`, so GA4 orders
/// them by time and up to `maxInFlight` requests run at once. An event goes at once when no
/// request runs; while requests run, what arrives gathers: a full request starts when there is
/// room for it, a partial one when the last running request ends (requests stay large when calls
/// come faster than answers, and nothing waits idle). GA4 answers 2xx even for what it drops (the mapping refuses that before),
/// so: 2xx OK, 429/5xx and no answer retryable (the host backs off and calls again), other
/// statuses permanent.
final class GA4Uploads: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`; answers arrive on host threads.
    struct Item {
        /// The request's user fields, serialized: events with equal ones share a request.
        let user: [UInt8]
        let userFields: JSONObject
        let event: JSONObject
        let bytes: Int
        let completion: Completion
    }

    private struct Upload {
        let url: String
        let timeout: Double
        let items: [Item]
    }

    static let maxEvents = 25
    static let maxBytes = 120 * 1024

    private let http: HostHTTP
    private let maxPending: Int
    private let lock = NSLock()
    private var held: [Item] = []
    private var queued: [Upload] = []
    /// Requests started and not yet answered.
    private var running = 0
    /// Requests at once: the host's bound per instance, at most 4.
    let maxInFlight: Int
    private var url: String
    private var timeout: Double

    init(http: HostHTTP, url: URL, timeout: Double, maxPending: Int?) {
        self.http = http
        self.url = url.absoluteString
        self.timeout = timeout
        self.maxPending = max(1, maxPending ?? 1)
        maxInFlight = max(1, min(4, http.maxInFlight))
    }

    func configure(url: URL, timeout: Double) {
        lock.lock()
        self.url = url.absoluteString
        self.timeout = timeout
        lock.unlock()
    }

    /// Holds one call's request body (one event) with its completion; `now`: send without waiting
    /// for more (the host cannot finish the call later).
    func hold(_ body: JSONObject, _ completion: Completion, now: Bool) {
        var userFields = body
        var event = body["events"]?.arrayValue?.first?.objectValue ?? [:]
        userFields["events"] = nil
        if let micros = userFields.removeValue(forKey: "timestamp_micros") { event["timestamp_micros"] = micros }
        let item = Item(user: userFields.serializedBytes(), userFields: userFields, event: event,
                        bytes: event.serializedBytes().count + 1, completion: completion)
        lock.lock()
        held.append(item)
        let all = now || running == 0 || held.count >= maxPending
        // A request is complete once full or once another user's event follows it.
        let ready = all || held.count >= Self.maxEvents || held[0].user != item.user
        if ready { queueHeld(all: all) }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    func flush() {
        lock.lock()
        queueHeld(all: true)
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    /// Moves held events into requests (under `lock`); without `all`, a last request that is not
    /// full stays held to gather more.
    private func queueHeld(all: Bool) {
        var chunk: [Item] = []
        var bytes = 0
        var taken = 0
        for item in held {
            if let first = chunk.first, first.user != item.user || chunk.count == Self.maxEvents || bytes + item.bytes > Self.maxBytes {
                queued.append(Upload(url: url, timeout: timeout, items: chunk))
                taken += chunk.count
                chunk = []
                bytes = 0
            }
            chunk.append(item)
            bytes += item.bytes
        }
        if !chunk.isEmpty, all || chunk.count == Self.maxEvents {
            queued.append(Upload(url: url, timeout: timeout, items: chunk))
            taken += chunk.count
        }
        held.removeFirst(taken)
    }

    /// The queued uploads that may start now, oldest first, counted as running (under `lock`).
    private func startable() -> [Upload] {
        var starting: [Upload] = []
        while !queued.isEmpty, running < maxInFlight {
            starting.append(queued.removeFirst())
            running += 1
        }
        return starting
    }

    /// A request ended: a partial request held goes when nothing else runs, then what may start.
    private func ended() {
        lock.lock()
        running -= 1
        if running == 0, queued.isEmpty, !held.isEmpty { queueHeld(all: true) }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    private func send(_ upload: Upload) {
        var body = upload.items[0].userFields
        // The request's own timestamp: the first event's (each event carries its own as well).
        if let micros = upload.items[0].event["timestamp_micros"] { body["timestamp_micros"] = micros }
        body["events"] = .array(upload.items.map { .object($0.event) })
        let request = HostHTTP.Request(url: upload.url, headers: [.init("Content-Type", "application/json")],
                                       body: body.serializedBytes(), timeoutSeconds: upload.timeout)
        do {
            try http.start(request) { [self] answer in answered(upload, answer) }
        } catch {
            for item in upload.items { item.completion.fail(IntegrationError.retryable("Google Analytics 4: \(error.message)")) }
            ended()
        }
    }

    private func answered(_ upload: Upload, _ answer: HostHTTP.Answer) {
        let outcome: Result<Void, IntegrationError>
        switch answer {
        case .failed(let why):
            outcome = .failure(.retryable("Google Analytics 4: POST failed: \(why)"))
        case .response(let status, _, let body):
            let text = "Google Analytics 4: POST answered \(status): \(String(decoding: body.prefix(300), as: UTF8.self))"
            if (200..<300).contains(status) {
                outcome = .success(())
            } else if status == 429 || status >= 500 {
                let after = answer.header("Retry-After").map { " (Retry-After: \($0))" } ?? ""
                outcome = .failure(.retryable(text + after))
            } else {
                outcome = .failure(.permanent(text))
            }
        }
        for item in upload.items { item.completion.finish(outcome) }
        ended()
    }
}
