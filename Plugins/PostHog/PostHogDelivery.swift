import AnalyticsIntegration
import Foundation

/// Sends capture events to PostHog's `/batch/` endpoint within its limits, and says per event
/// what became of it.
///
/// - Requests hold at most `maxEvents` events (100, what PostHog's SDKs send) and `maxBytes`
///   of JSON before compression; an event alone larger than `maxEventBytes` (PostHog's 1 MB per
///   event) is refused without being sent.
/// - 2xx: delivered. 400 and 413 on a request of several events: it is split in halves and each
///   half is sent on its own, so one bad event never takes others down; on a single event it is
///   refused for good. 401/403 and other 4xx: refused (bad key, permanent).
/// - 408, 429, 5xx (but 501/505) and network errors: tried again up to `maxAttempts` times,
///   waiting an exponential backoff that `Retry-After` (seconds) can only lengthen; past that the
///   events are "retry later" (the host calls again with backoff).
final class PostHogDelivery {
    enum Outcome: Equatable, Sendable {
        case delivered
        case refused(String)
        case retryLater(String)
    }

    /// What the transport answered for one POST.
    enum Answer: Sendable {
        case response(status: Int, retryAfter: String?, body: [UInt8])
        case failed(String)
    }

    /// POSTs `body` to `url` with `headers`. The one place that touches the network.
    typealias Transport = @Sendable (_ url: URL, _ headers: [(name: String, value: String)], _ body: [UInt8]) -> Answer

    var configuration: PostHogConfiguration
    let transport: Transport
    /// Waits between attempts (injected: tests record the waits instead of sleeping).
    let wait: (Double) -> Void
    var maxEvents = 100
    var maxBytes = 900 * 1024
    var maxEventBytes = 1024 * 1024
    var baseBackoff = 0.5
    var maxBackoff = 30.0
    /// Requests sent, for reports and tests.
    private(set) var requestsSent = 0

    init(configuration: PostHogConfiguration, transport: @escaping Transport, wait: @escaping (Double) -> Void) {
        self.configuration = configuration
        self.transport = transport
        self.wait = wait
    }

    /// Delivers `events` (captures), in order; one outcome per event.
    func deliver(_ events: [PostHogCapture]) -> [Outcome] {
        var outcomes = [Outcome](repeating: .delivered, count: events.count)
        var encoded: [(index: Int, bytes: [UInt8])] = []
        for (index, event) in events.enumerated() {
            let bytes = event.bytes
            if bytes.count > maxEventBytes {
                outcomes[index] = .refused("PostHog: event \(event.name) is \(bytes.count) bytes, over PostHog's \(maxEventBytes)-byte limit per event")
            } else {
                encoded.append((index, bytes))
            }
        }
        var chunk: [(index: Int, bytes: [UInt8])] = []
        var chunkBytes = 0
        for item in encoded {
            if !chunk.isEmpty, chunk.count == maxEvents || chunkBytes + item.bytes.count + 1 > maxBytes {
                send(chunk, events: events, into: &outcomes)
                chunk = []
                chunkBytes = 0
            }
            chunk.append(item)
            chunkBytes += item.bytes.count + 1
        }
        if !chunk.isEmpty { send(chunk, events: events, into: &outcomes) }
        return outcomes
    }

    private func send(_ chunk: [(index: Int, bytes: [UInt8])], events: [PostHogCapture], into outcomes: inout [Outcome]) {
        var backoff = baseBackoff
        var lastProblem = ""
        for attempt in 1...configuration.maxAttempts {
            if attempt > 1 { wait(min(backoff, maxBackoff)); backoff *= 2 }
            let (headers, body) = request(for: chunk)
            requestsSent += 1
            switch transport(configuration.batchURL, headers, body) {
            case .failed(let reason):
                lastProblem = "POST \(configuration.batchURL.absoluteString) failed: \(reason)"
            case .response(let status, let retryAfter, let answer):
                let detail = "POST \(configuration.batchURL.absoluteString) answered \(status)\(summary(answer))"
                switch status {
                case 200..<300:
                    return
                case 400, 413:
                    if chunk.count > 1 {
                        let half = chunk.count / 2
                        send(Array(chunk[..<half]), events: events, into: &outcomes)
                        send(Array(chunk[half...]), events: events, into: &outcomes)
                    } else {
                        outcomes[chunk[0].index] = .refused("PostHog refused event \(events[chunk[0].index].name): \(detail)")
                    }
                    return
                case _ where Self.isTransient(status):
                    lastProblem = detail
                    if let seconds = retryAfter.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }), seconds > backoff {
                        backoff = seconds
                    }
                default:
                    for item in chunk { outcomes[item.index] = .refused("PostHog refused event \(events[item.index].name): \(detail)") }
                    return
                }
            }
        }
        for item in chunk { outcomes[item.index] = .retryLater("\(lastProblem) (\(configuration.maxAttempts) attempts)") }
    }

    /// Worth another try: timeouts, rate limits and server errors (not 501/505, which will not change).
    static func isTransient(_ status: Int) -> Bool {
        status == 408 || status == 429 || ((500..<600).contains(status) && status != 501 && status != 505)
    }

    /// `{"api_key", "batch", "sent_at"}`, gzip-compressed when configured.
    private func request(for chunk: [(index: Int, bytes: [UInt8])]) -> ([(name: String, value: String)], [UInt8]) {
        var body: [UInt8] = Array(#"{"api_key":"#.utf8)
        JSON.string(configuration.apiKey).write(to: &body)
        body += Array(#","sent_at":"#.utf8)
        JSON.string(Self.now()).write(to: &body)
        body += Array(#","batch":["#.utf8)
        for (n, item) in chunk.enumerated() {
            if n > 0 { body.append(UInt8(ascii: ",")) }
            body += item.bytes
        }
        body += Array("]}".utf8)
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("User-Agent", "\(PostHogMapping.library)-posthog/\(PostHog.version)")]
        if configuration.gzip, let compressed = try? Gzip.compress(body) {
            headers.append(("Content-Encoding", "gzip"))
            return (headers, compressed)
        }
        return (headers, body)
    }

    private func summary(_ body: [UInt8]) -> String {
        guard !body.isEmpty else { return "" }
        return ": " + String(decoding: body.prefix(300), as: UTF8.self)
    }

    /// The time now as ISO-8601 UTC with milliseconds (`sent_at`), written directly: a
    /// formatter made per request cost more than the request's events (measured).
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = Int(spec.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }

    /// The transport through the host's HTTP client code (URLSession, TLS included).
    static func urlSessionTransport(timeout: Double) -> Transport {
        let client = HTTPClient()
        return { url, headers, body in
            switch client.send(HTTPRequest(method: "POST", url: url, headers: headers, body: body, timeout: timeout)) {
            case .success(let response): return .response(status: response.status, retryAfter: response.header("Retry-After"), body: response.body)
            case .failure(let error): return .failed(error.description)
            }
        }
    }
}
