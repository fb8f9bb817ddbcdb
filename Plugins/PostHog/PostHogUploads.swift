import AnalyticsIntegration
import Foundation

/// PostHog's side of the kit's ``UploadQueue``: capture events batched across calls and uploaded
/// to `/batch/` through the host's HTTP client (ABI 1.3); each call is answered when PostHog
/// answered the request that carried its event.
///
/// - Requests of at most 100 events and 900 kB of JSON; an event over PostHog's 1 MB is refused
///   without being sent. Each event carries its own timestamp, so requests of captures need no
///   order between them. PostHog applies person and group changes (`$identify`, `$create_alias`,
///   `$groupidentify`, `$merge_dangerously`) in the order it ingests them, so a request holding
///   one of a person (or group) runs only after every earlier request holding one of the same
///   person was answered; other requests run side by side (measured on 20,000 events of 1,000
///   users: making every such request run alone took 40 % more wall time for the same CPU).
/// - 2xx: every event OK. 400/413 on several events: split (the bad event ends alone, refused for
///   good with PostHog's detail). 408, 429, 5xx (not 501/505) and no answer: retryable (the host
///   backs off, honouring Retry-After, and calls again). Other 4xx (a wrong key): permanent.
final class PostHogUploads: Sendable {
    /// Events whose effect depends on the order PostHog ingests them in.
    static let orderedEvents: Set<String> = ["$identify", "$create_alias", "$groupidentify", "$merge_dangerously"]
    static let maxEventBytes = 1024 * 1024

    private let queue: UploadQueue<PostHogRequests>

    init(http: HostHTTP, host: IntegrationHost, configuration: PostHogConfiguration) {
        queue = UploadQueue(vendor: PostHogRequests(), target: PostHogRequests.target(configuration),
                            limits: .init(maxEvents: 100, maxBytes: 900 * 1024), http: http, host: host)
    }

    func configure(_ configuration: PostHogConfiguration) { queue.retarget(PostHogRequests.target(configuration)) }

    /// Holds one capture event with its call's completion (sent at once when the host cannot
    /// finish the call later).
    func hold(_ capture: PostHogCapture, _ completion: Completion) throws(IntegrationError) {
        guard capture.bytes.count <= Self.maxEventBytes else {
            throw .permanent("PostHog: event \(capture.name) is \(capture.bytes.count) bytes, over PostHog's \(Self.maxEventBytes)-byte limit per event")
        }
        queue.hold(.init(bytes: capture.bytes, name: capture.name), size: capture.bytes.count,
                   orderKey: Self.orderedEvents.contains(capture.event) ? capture.person : nil, completion: completion)
    }

    /// Uploads what is held now (flush: the host then waits for the answers).
    func flush() { queue.flush() }
}

/// The `/batch/` request and what PostHog's answer means.
struct PostHogRequests: UploadVendor {
    struct Item: Sendable {
        let bytes: [UInt8]
        /// "Order Completed (messageId …)", for reasons.
        let name: String
    }

    /// Where a request goes, copied when its batch is formed (settings may change meanwhile).
    struct Target: Sendable {
        var url: String
        var apiKey: String
        var gzip: Bool
        var timeout: Double
    }

    var name: String { "PostHog" }

    static func target(_ c: PostHogConfiguration) -> Target {
        Target(url: c.batchURL.absoluteString, apiKey: c.apiKey, gzip: c.gzip, timeout: c.timeoutSeconds)
    }

    func request(for batch: UploadBatch<Item, Target>) -> HostHTTP.Request {
        var body: [UInt8] = Array(#"{"api_key":"#.utf8)
        JSON.string(batch.target.apiKey).write(to: &body)
        body += Array(#","sent_at":"#.utf8)
        JSON.string(PostHogDelivery.now()).write(to: &body)
        body += Array(#","batch":["#.utf8)
        for (n, item) in batch.items.enumerated() {
            if n > 0 { body.append(UInt8(ascii: ",")) }
            body += item.bytes
        }
        body += Array("]}".utf8)
        return HostHTTP.Request(url: batch.target.url,
                                headers: [.init("Content-Type", "application/json"),
                                          .init("User-Agent", "\(PostHogMapping.library)-posthog/\(PostHog.version)")],
                                body: body, gzip: batch.target.gzip, timeoutSeconds: batch.target.timeout)
    }

    func outcome(of answer: HostHTTP.Answer, for batch: UploadBatch<Item, Target>) -> UploadOutcome {
        let url = batch.target.url
        switch answer {
        case .failed(let why):
            return .all(.failure(.retryable("PostHog: POST \(url) failed: \(why)")))
        case .response(let status, _, let body):
            let detail = "POST \(url) answered \(status)" + (body.isEmpty ? "" : ": " + String(decoding: body.prefix(300), as: UTF8.self))
            switch status {
            case 200..<300:
                return .all(.success(()))
            case 400 where batch.items.count > 1, 413 where batch.items.count > 1:
                return .split
            case 400, 413:
                return .all(.failure(.permanent("PostHog refused event \(batch.items[0].name): \(detail)")))
            case _ where PostHogDelivery.isTransient(status):
                let after = answer.header("Retry-After").map { " (Retry-After: \($0))" } ?? ""
                return .all(.failure(.retryable("PostHog: \(detail)\(after)")))
            default:
                return .each(batch.items.map { .failure(.permanent("PostHog refused event \($0.name): \(detail)")) })
            }
        }
    }
}
