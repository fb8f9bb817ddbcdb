import AnalyticsIntegration
import Foundation

/// Batches capture events across calls and uploads them to `/batch/` through the host's HTTP
/// client (ABI 1.3); each call is answered when PostHog answered the request that carried its
/// event, so nothing is answered OK while it is only held here.
///
/// - Up to `maxInFlight` requests at once (each event carries its own timestamp, so PostHog needs
///   no order between requests of captures), each of at most `maxEvents` events and `maxBytes` of
///   JSON. A request that changes a person or group (`$identify`, `$create_alias`,
///   `$groupidentify`, `$merge_dangerously`) goes alone: after every earlier request was answered
///   and before any later one starts, so PostHog ingests it in order with the events it merges.
/// - An event is uploaded at once when no request runs: nothing waits idle, so no timer is
///   needed. While requests run, what arrives gathers; a full request starts when there is room
///   for it, a partial one when the last running request ends (so requests stay large when the
///   calls come faster than the answers).
/// - 2xx: every event OK. 400/413 on several events: split in halves, each sent again, until the
///   bad event is alone (refused for good with PostHog's detail), so one bad event never takes
///   the others down. 408, 429, 5xx (not 501/505) and no answer: retryable (the host backs off and
///   calls again; `Retry-After` is named in the reason). Other 4xx (a wrong key): permanent.
final class PostHogUploads: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `lock`; answers arrive on host threads.
    struct Item {
        let bytes: [UInt8]
        let completion: Completion
        /// "Order Completed (uuid …)", for reasons.
        let name: String
        /// One of `orderedEvents`.
        let ordered: Bool
    }

    /// Where a request goes, copied when it is made (settings may change meanwhile).
    struct Target {
        var url: String
        var apiKey: String
        var gzip: Bool
        var timeout: Double
    }

    private struct Upload {
        let target: Target
        let items: [Item]
        /// Changes a person or group: runs alone, in order with the others.
        var ordered: Bool { items.contains { $0.ordered } }
    }

    /// Events whose effect depends on the order PostHog ingests them in.
    static let orderedEvents: Set<String> = ["$identify", "$create_alias", "$groupidentify", "$merge_dangerously"]

    private let http: HostHTTP
    private let lock = NSLock()
    private var held: [Item] = []
    private var heldBytes = 0
    private var queued: [Upload] = []
    /// Requests started and not yet answered; `orderedRunning`: one of them runs alone.
    private var running = 0
    private var orderedRunning = false
    /// Requests at once: the host's bound per instance, at most 4.
    let maxInFlight: Int
    private var target: Target
    /// The host's bound on pending calls: held events go before it would stop the hooks.
    private let maxPending: Int
    let maxEvents = 100
    let maxBytes = 900 * 1024
    let maxEventBytes = 1024 * 1024

    init(http: HostHTTP, configuration: PostHogConfiguration, maxPending: Int?) {
        self.http = http
        self.maxPending = max(1, maxPending ?? 1)
        maxInFlight = max(1, min(4, http.maxInFlight))
        target = Self.target(configuration)
    }

    static func target(_ c: PostHogConfiguration) -> Target {
        Target(url: c.batchURL.absoluteString, apiKey: c.apiKey, gzip: c.gzip, timeout: c.timeoutSeconds)
    }

    func configure(_ configuration: PostHogConfiguration) {
        lock.lock()
        target = Self.target(configuration)
        lock.unlock()
    }

    /// Holds one capture event with its call's completion; `now`: upload without waiting for more
    /// (the host cannot finish the call later, so the hook waits for this answer).
    func hold(_ capture: JSONObject, _ completion: Completion, now: Bool) throws(IntegrationError) {
        let bytes = capture.serializedBytes()
        let name = "\(capture["event"]?.stringValue ?? "?") (uuid \(capture["uuid"]?.stringValue ?? "none"))"
        guard bytes.count <= maxEventBytes else {
            throw .permanent("PostHog: event \(name) is \(bytes.count) bytes, over PostHog's \(maxEventBytes)-byte limit per event")
        }
        lock.lock()
        held.append(Item(bytes: bytes, completion: completion, name: name, ordered: Self.orderedEvents.contains(capture["event"]?.stringValue ?? "")))
        heldBytes += bytes.count + 1
        let all = now || running == 0 || held.count >= maxPending
        let ready = all || held.count >= maxEvents || heldBytes >= maxBytes
        if ready { queueHeld(all: all) }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    /// Uploads what is held now (flush: the host then waits for the answers).
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
            if !chunk.isEmpty, chunk.count == maxEvents || bytes + item.bytes.count + 1 > maxBytes {
                queued.append(Upload(target: target, items: chunk))
                taken += chunk.count
                chunk = []
                bytes = 0
            }
            chunk.append(item)
            bytes += item.bytes.count + 1
        }
        if !chunk.isEmpty, all || chunk.count == maxEvents || bytes >= maxBytes {
            queued.append(Upload(target: target, items: chunk))
            taken += chunk.count
            bytes = 0
        }
        held.removeFirst(taken)
        heldBytes = held.isEmpty ? 0 : bytes
    }

    /// The queued uploads that may start now, oldest first, counted as running (under `lock`).
    private func startable() -> [Upload] {
        var starting: [Upload] = []
        while let next = queued.first, running < maxInFlight, !orderedRunning, !next.ordered || running == 0 {
            queued.removeFirst()
            running += 1
            orderedRunning = next.ordered
            starting.append(next)
        }
        return starting
    }

    /// A request ended: a partial request held goes when nothing else runs, then what may start.
    private func ended(_ upload: Upload, requeue: [Upload] = []) {
        lock.lock()
        running -= 1
        if upload.ordered { orderedRunning = false }
        queued.insert(contentsOf: requeue, at: 0)
        if running == 0, queued.isEmpty, !held.isEmpty { queueHeld(all: true) }
        let starting = startable()
        lock.unlock()
        for upload in starting { send(upload) }
    }

    private func send(_ upload: Upload) {
        var body: [UInt8] = Array(#"{"api_key":"#.utf8)
        JSON.string(upload.target.apiKey).write(to: &body)
        body += Array(#","sent_at":"#.utf8)
        JSON.string(PostHogDelivery.now()).write(to: &body)
        body += Array(#","batch":["#.utf8)
        for (n, item) in upload.items.enumerated() {
            if n > 0 { body.append(UInt8(ascii: ",")) }
            body += item.bytes
        }
        body += Array("]}".utf8)
        let request = HostHTTP.Request(url: upload.target.url,
                                       headers: [.init("Content-Type", "application/json"),
                                                 .init("User-Agent", "\(PostHogMapping.library)-posthog/\(PostHog.version)")],
                                       body: body, gzip: upload.target.gzip, timeoutSeconds: upload.target.timeout)
        do {
            try http.start(request) { [self] answer in answered(upload, answer) }
        } catch {
            // Not started (the host is stopping, or the request is malformed): answered now.
            for item in upload.items { item.completion.fail(IntegrationError.retryable("PostHog: \(error.message)")) }
            ended(upload)
        }
    }

    private func answered(_ upload: Upload, _ answer: HostHTTP.Answer) {
        var halves: [Upload] = []
        let url = upload.target.url
        switch answer {
        case .failed(let why):
            for item in upload.items { item.completion.fail(IntegrationError.retryable("PostHog: POST \(url) failed: \(why)")) }
        case .response(let status, _, let body):
            let detail = "POST \(url) answered \(status)" + (body.isEmpty ? "" : ": " + String(decoding: body.prefix(300), as: UTF8.self))
            switch status {
            case 200..<300:
                for item in upload.items { item.completion.succeed() }
            case 400 where upload.items.count > 1, 413 where upload.items.count > 1:
                let half = upload.items.count / 2
                halves = [Upload(target: upload.target, items: Array(upload.items[..<half])),
                          Upload(target: upload.target, items: Array(upload.items[half...]))]
            case 400, 413:
                upload.items[0].completion.fail(IntegrationError.permanent("PostHog refused event \(upload.items[0].name): \(detail)"))
            case _ where PostHogDelivery.isTransient(status):
                let after = answer.header("Retry-After").map { " (Retry-After: \($0))" } ?? ""
                for item in upload.items { item.completion.fail(IntegrationError.retryable("PostHog: \(detail)\(after)")) }
            default:
                for item in upload.items { item.completion.fail(IntegrationError.permanent("PostHog refused event \(item.name): \(detail)")) }
            }
        }
        // Split halves go first; what gathered while requests ran goes after them.
        ended(upload, requeue: halves)
    }
}
