import AnalyticsIntegration
import Foundation

/// GA4's side of the kit's ``UploadQueue``: Measurement Protocol events batched across calls and
/// sent through the host's HTTP client (ABI 1.3); each call is answered when GA4 answered the
/// request that carried its event.
///
/// A request speaks for one user (`client_id` or `app_instance_id`, `user_id`,
/// `user_properties`), so the serialized user fields are the queue's key: consecutive events of
/// the same user go together, at most 25 per request (GA4's limit) and under 120 kB. Each event
/// carries its own `timestamp_micros`, so GA4 orders them by time and requests run side by side.
/// GA4 answers 2xx even for what it drops (the mapping refuses that before), so: 2xx OK, 429/5xx
/// and no answer retryable (the host backs off, honouring Retry-After, and calls again), other
/// statuses permanent.
final class GA4Uploads: Sendable {
    private let queue: UploadQueue<GA4Requests>

    init(http: HostHTTP, host: IntegrationHost, url: URL, timeout: Double) {
        queue = UploadQueue(vendor: GA4Requests(), target: .init(url: url.absoluteString, timeout: timeout),
                            limits: .init(maxEvents: 25, maxBytes: 120 * 1024), http: http, host: host)
    }

    func configure(url: URL, timeout: Double) { queue.retarget(.init(url: url.absoluteString, timeout: timeout)) }

    /// Holds one call's request body (one event) with its completion (sent at once when the host
    /// cannot finish the call later).
    func hold(_ body: JSONObject, _ completion: Completion) {
        var userFields = body
        var event = body["events"]?.arrayValue?.first?.objectValue ?? [:]
        userFields["events"] = nil
        if let micros = userFields.removeValue(forKey: "timestamp_micros") { event["timestamp_micros"] = micros }
        let user = String(decoding: userFields.serializedBytes(), as: UTF8.self)
        queue.hold(.init(userFields: userFields, event: event), size: event.serializedBytes().count, key: user, completion: completion)
    }

    func flush() { queue.flush() }
}

/// The Measurement Protocol request of one user's events and what GA4's answer means.
struct GA4Requests: UploadVendor {
    struct Item: Sendable {
        let userFields: JSONObject
        let event: JSONObject
    }

    struct Target: Sendable {
        var url: String
        var timeout: Double
    }

    var name: String { "Google Analytics 4" }

    func request(for batch: UploadBatch<Item, Target>) -> HostHTTP.Request {
        var body = batch.items[0].userFields
        // The request's own timestamp: the first event's (each event carries its own as well).
        if let micros = batch.items[0].event["timestamp_micros"] { body["timestamp_micros"] = micros }
        body["events"] = .array(batch.items.map { .object($0.event) })
        return HostHTTP.Request(url: batch.target.url, headers: [.init("Content-Type", "application/json")],
                                body: body.serializedBytes(), timeoutSeconds: batch.target.timeout)
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
