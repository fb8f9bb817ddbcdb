import AnalyticsIntegration
import Foundation

/// GA4's side of the kit's ``UploadQueue``: Measurement Protocol events batched across calls and
/// sent through the host's HTTP client (ABI 1.3); each call is answered when GA4 answered the
/// request that carried its event.
///
/// A request speaks for one client (`client_id` or `app_instance_id`, `user_id`,
/// `user_properties`): those fields are the queue's key, so a client's events are gathered from
/// across the queue — a server's traffic interleaves many users — at most 25 per request (GA4's
/// limit) and under 120 kB of events, waiting at most `maxWaitSeconds` for more. A client's
/// requests are started in order; each event carries its own `timestamp_micros`, so GA4 orders
/// them by time and up to 4 requests run side by side (one client's too: a stream of one user
/// must not wait on each answer).
/// GA4 answers 2xx even for what it drops (the mapping refuses that before), so: 2xx OK, 429/5xx
/// and no answer retryable (the host backs off, honouring Retry-After, and calls again), other
/// statuses permanent.
final class GA4Uploads: Sendable {
    static let maxEvents = 25
    static let maxEventBytes = 120 * 1024

    private let queue: UploadQueue<GA4Requests>

    init(http: HostHTTP, host: IntegrationHost, url: URL, timeout: Double, maxWait: Double) {
        queue = UploadQueue(vendor: GA4Requests(), target: .init(url: url.absoluteString, timeout: timeout),
                            limits: .init(maxEvents: Self.maxEvents, maxBytes: Self.maxEventBytes, maxWait: maxWait),
                            http: http, host: host)
    }

    func configure(url: URL, timeout: Double) { queue.retarget(.init(url: url.absoluteString, timeout: timeout)) }

    /// Holds one call's event with its completion (sent at once when the host cannot finish the
    /// call later).
    func hold(_ event: GA4Mapping.GA4Event, _ completion: Completion) {
        queue.hold(.init(userFields: event.userFields, event: event.event, micros: event.micros),
                   size: event.event.count, key: event.key, completion: completion)
    }

    func flush() { queue.flush() }
}

/// The Measurement Protocol request of one client's events and what GA4's answer means.
struct GA4Requests: UploadVendor {
    struct Item: Sendable {
        /// `"client_id":…,"user_id":…,"user_properties":{…}` (the same for every item of a batch).
        let userFields: [UInt8]
        /// `{"name":…,"params":{…},"timestamp_micros":…}`.
        let event: [UInt8]
        let micros: Int?
    }

    struct Target: Sendable {
        var url: String
        var timeout: Double
    }

    var name: String { "Google Analytics 4" }

    static func body(_ items: [Item]) -> [UInt8] {
        var out = JSONOutput(capacity: items.reduce(64 + items[0].userFields.count) { $0 + $1.event.count + 1 })
        out.byte(UInt8(ascii: "{"))
        out.append(items[0].userFields)
        // The request's own time: its first event's (each event carries its own as well).
        if let micros = items[0].micros {
            out.raw(",\"timestamp_micros\":")
            out.number(micros)
        }
        out.raw(",\"events\":[")
        for (n, item) in items.enumerated() {
            if n > 0 { out.byte(UInt8(ascii: ",")) }
            out.append(item.event)
        }
        out.raw("]}")
        return out.bytes
    }

    func request(for batch: UploadBatch<Item, Target>) -> HostHTTP.Request {
        HostHTTP.Request(url: batch.target.url, headers: [.init("Content-Type", "application/json")],
                         body: Self.body(batch.items), timeoutSeconds: batch.target.timeout)
    }

    func outcome(of answer: HostHTTP.Answer, for batch: UploadBatch<Item, Target>) -> UploadOutcome {
        switch answer {
        case .failed(let why):
            return .all(.failure(.retryable("Google Analytics 4: POST failed: \(why)")))
        case .response(let status, _, let body):
            let text = "Google Analytics 4: POST answered \(status): \(String(decoding: body.prefix(300), as: UTF8.self))"
            if (200..<300).contains(status) { return .all(.success(())) }
            if status == 429 || status >= 500 {
                let after = answer.header("Retry-After").map { " (Retry-After: \($0))" } ?? ""
                return .all(.failure(.retryable(text + after)))
            }
            return .all(.failure(.permanent(text)))
        }
    }
}
