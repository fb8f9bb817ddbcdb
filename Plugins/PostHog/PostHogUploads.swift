import AnalyticsIntegration
import Foundation

/// Batches capture events across calls and uploads them to `/batch/` through the host's HTTP
/// client (ABI 1.3); each call is answered when PostHog answered the request that carried its
/// event, so nothing is answered OK while it is only held here.
///
/// - One request at a time, so PostHog ingests a user's events in order (`$identify` before the
///   events it merges); what arrives meanwhile gathers and goes when that request ends, in
///   requests of at most `maxEvents` events and `maxBytes` of JSON. An event is uploaded at once
///   when no request runs: nothing waits idle, so no timer is needed.
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
    }

    private let http: HostHTTP
    private let lock = NSLock()
    private var held: [Item] = []
    private var heldBytes = 0
    private var queued: [Upload] = []
    private var running = false
    private var target: Target
    /// The host's bound on pending calls: held events go before it would stop the hooks.
    private let maxPending: Int
    let maxEvents = 100
    let maxBytes = 900 * 1024
    let maxEventBytes = 1024 * 1024

    init(http: HostHTTP, configuration: PostHogConfiguration, maxPending: Int?) {
        self.http = http
        self.maxPending = max(1, maxPending ?? 1)
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
        held.append(Item(bytes: bytes, completion: completion, name: name))
        heldBytes += bytes.count + 1
        let ready = now || !running || held.count >= maxEvents || heldBytes >= maxBytes || held.count >= maxPending
        lock.unlock()
        if ready { uploadHeld() }
    }

    /// Uploads what is held now (flush: the host then waits for the answers).
    func flush() { uploadHeld() }

    private func uploadHeld() {
        lock.lock()
        let items = held, to = target
        held = []
        heldBytes = 0
        var chunk: [Item] = []
        var bytes = 0
        for item in items {
            if !chunk.isEmpty, chunk.count == maxEvents || bytes + item.bytes.count + 1 > maxBytes {
                queued.append(Upload(target: to, items: chunk))
                chunk = []
                bytes = 0
            }
            chunk.append(item)
            bytes += item.bytes.count + 1
        }
        if !chunk.isEmpty { queued.append(Upload(target: to, items: chunk)) }
        lock.unlock()
        pump()
    }

    /// Starts the oldest queued upload when no request runs.
    private func pump() {
        lock.lock()
        guard !running, !queued.isEmpty else { return lock.unlock() }
        let upload = queued.removeFirst()
        running = true
        lock.unlock()
        send(upload)
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
            lock.lock()
            running = false
            lock.unlock()
            for item in upload.items { item.completion.fail(IntegrationError.retryable("PostHog: \(error.message)")) }
            pump()
        }
    }

    private func answered(_ upload: Upload, _ answer: HostHTTP.Answer) {
        lock.lock()
        running = false
        lock.unlock()
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
                lock.lock()
                queued.insert(contentsOf: [Upload(target: upload.target, items: Array(upload.items[..<half])),
                                           Upload(target: upload.target, items: Array(upload.items[half...]))], at: 0)
                lock.unlock()
            case 400, 413:
                upload.items[0].completion.fail(IntegrationError.permanent("PostHog refused event \(upload.items[0].name): \(detail)"))
            case _ where PostHogDelivery.isTransient(status):
                let after = answer.header("Retry-After").map { " (Retry-After: \($0))" } ?? ""
                for item in upload.items { item.completion.fail(IntegrationError.retryable("PostHog: \(detail)\(after)")) }
            default:
                for item in upload.items { item.completion.fail(IntegrationError.permanent("PostHog refused event \(item.name): \(detail)")) }
            }
        }
        // What gathered while this request ran goes next, after any split halves.
        lock.lock()
        let gathered = queued.isEmpty && !held.isEmpty
        lock.unlock()
        if gathered { uploadHeld() } else { pump() }
    }
}
