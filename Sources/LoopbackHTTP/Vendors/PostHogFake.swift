import AnalyticsCore
import Foundation

/// PostHog's capture API (`POST /batch/`) on 127.0.0.1, strict: it answers what PostHog answers
/// and refuses what PostHog refuses, so a test fails when an integration sends a request the real
/// service would not take.
///
/// Checked: the method and path (`/batch/`), `Content-Type: application/json`, a readable
/// (optionally gzip) body, `api_key` equal to the project key (else 401 with PostHog's
/// `authentication_error` body), a non-empty `batch` array of objects each with a non-empty
/// `event`, a `distinct_id`, an ISO-8601 `timestamp` when present, a `uuid` that is a UUID when
/// present and `properties` an object (else 400 `validation_error`, the whole request refused),
/// the body size (413 past ``maxBodyBytes``). Events whose `event` is in ``poisonedEvents`` make
/// the request fail with 400 as PostHog does for a payload it cannot ingest (for split tests).
/// ``failNext(_:)`` queues failures (429 with Retry-After, 503) answered before any check.
/// Besides refusals it notes, in ``locatedBySender``, every accepted event PostHog would locate
/// by the request's address (no `$ip` and no `$geoip_disable`: the sender's location, not the
/// user's), and in ``oversized`` every event over PostHog's 1 MB per event (dropped by PostHog).
public final class PostHogFake: @unchecked Sendable {
    public let projectKey: String
    public let server: LoopbackHTTPServer
    private let lock = NSLock()
    private var accepted: [JSONObject] = []
    private var refusals: [String] = []
    private var located: [String] = []
    private var tooLarge: [String] = []
    private var failures: [ScriptedResponse] = []
    /// Holds answers back on request (after the request was judged and its events taken).
    public let gate = AnswerGate()
    private var _maxBodyBytes = 20 * 1024 * 1024
    private var _poisoned: Set<String> = []
    private var _responseDelay = 0.0

    public init(projectKey: String = "phc_test_project_key") throws {
        self.projectKey = projectKey
        let box = WeakBox()
        server = try LoopbackHTTPServer(options: .init(respond: { request in box.fake?.answerThroughGate(request) }))
        box.fake = self
    }

    /// `http://127.0.0.1:PORT`: the `apiHost` to give the integration.
    public var baseURL: String { server.baseURL }

    /// Seconds each accepted request waits before its answer (a slow PostHog: uploads stay in
    /// flight long enough for a test to kill the client meanwhile).
    public var responseDelay: Double {
        get { lock.lock(); defer { lock.unlock() }; return _responseDelay }
        set { lock.lock(); _responseDelay = newValue; lock.unlock() }
    }

    /// Every event accepted, in arrival order (duplicates included).
    public var events: [JSONObject] { lock.lock(); defer { lock.unlock() }; return accepted }
    /// The uuid (or event name) of each accepted event PostHog would locate by the sender's IP.
    public var locatedBySender: [String] { lock.lock(); defer { lock.unlock() }; return located }
    /// Accepted events over 1 MB, which PostHog drops.
    public var oversized: [String] { lock.lock(); defer { lock.unlock() }; return tooLarge }
    /// Why each refused request was refused.
    public var refused: [String] { lock.lock(); defer { lock.unlock() }; return refusals }

    public var maxBodyBytes: Int {
        get { lock.lock(); defer { lock.unlock() }; return _maxBodyBytes }
        set { lock.lock(); _maxBodyBytes = newValue; lock.unlock() }
    }

    public var poisonedEvents: Set<String> {
        get { lock.lock(); defer { lock.unlock() }; return _poisoned }
        set { lock.lock(); _poisoned = newValue; lock.unlock() }
    }

    /// Answers the next request with `response` before looking at it.
    public func failNext(_ response: ScriptedResponse, times: Int = 1) {
        lock.lock(); failures += Array(repeating: response, count: times); lock.unlock()
    }

    /// Waits until `count` events were accepted, or the deadline passes.
    public func waitForEvents(_ count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if events.count >= count { return true }
            _ = server.waitForRequests(server.requestCount + 1, timeout: 0.05)
        }
        return events.count >= count
    }

    private func refuse(_ status: Int, _ type: String, _ code: String, _ detail: String) -> ScriptedResponse {
        lock.lock(); refusals.append("\(status) \(code): \(detail)"); lock.unlock()
        let body: JSON = ["type": .string(type), "code": .string(code), "detail": .string(detail), "attr": nil]
        return .json(body.serialized(), status: status)
    }

    private func invalid(_ detail: String) -> ScriptedResponse { refuse(400, "validation_error", "invalid_payload", detail) }

    private func answerThroughGate(_ request: RecordedRequest) -> ScriptedResponse {
        let response = answer(request)
        gate.pass()
        return response
    }

    func answer(_ request: RecordedRequest) -> ScriptedResponse {
        lock.lock()
        let failure = failures.isEmpty ? nil : failures.removeFirst()
        let delay = _responseDelay
        let limit = _maxBodyBytes, poisoned = _poisoned
        lock.unlock()
        if let failure { return failure }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        guard request.method == "POST" else { return refuse(405, "invalid_request", "method_not_allowed", "Method \"\(request.method)\" not allowed.") }
        guard request.path == "/batch/" else { return refuse(404, "invalid_request", "not_found", "no route for \(request.path)") }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return invalid("Content-Type must be application/json, got \(request.header("Content-Type") ?? "none")")
        }
        if let problem = request.decodeError { return invalid("Malformed request data: \(problem)") }
        guard request.wireBodySize <= limit else { return refuse(413, "invalid_request", "payload_too_large", "request of \(request.wireBodySize) bytes is over \(limit)") }
        guard let body = try? JSON(parsing: request.body), let object = body.objectValue else {
            return invalid("Malformed request data: the body is not a JSON object")
        }
        guard let key = object["api_key"]?.stringValue, !key.isEmpty else {
            return refuse(401, "authentication_error", "invalid_api_key", "API key not provided. You can find your project API key in PostHog project settings.")
        }
        guard key == projectKey else {
            return refuse(401, "authentication_error", "invalid_api_key", "Project API key invalid. You can find your project API key in PostHog project settings.")
        }
        guard let batch = object["batch"]?.arrayValue, !batch.isEmpty else { return invalid("Invalid payload: batch must be a non-empty array") }
        var events: [JSONObject] = []
        var locatedHere: [String] = []
        var largeHere: [String] = []
        for (n, item) in batch.enumerated() {
            guard let event = item.objectValue else { return invalid("Invalid payload: batch[\(n)] is not an object") }
            guard let name = event["event"]?.stringValue, !name.isEmpty else { return invalid("Invalid payload: batch[\(n)] has no event name") }
            if poisoned.contains(name) { return invalid("Invalid payload: batch[\(n)] (\(name)) could not be ingested") }
            let properties = event["properties"]
            if let properties, properties.objectValue == nil { return invalid("Invalid payload: batch[\(n)].properties must be an object") }
            let distinct = event["distinct_id"] ?? properties?["distinct_id"]
            guard let distinct, (distinct.stringValue.map { !$0.isEmpty } ?? false) || distinct.numberValue != nil else {
                return invalid("Invalid payload: batch[\(n)] has no distinct_id")
            }
            if let uuid = event["uuid"], uuid.stringValue.flatMap(UUID.init(uuidString:)) == nil {
                return invalid("Invalid payload: batch[\(n)].uuid is not a UUID")
            }
            if let timestamp = event["timestamp"], timestamp.stringValue.flatMap(ISO8601Timestamp.microseconds) == nil {
                return invalid("Invalid payload: batch[\(n)].timestamp is not ISO-8601")
            }
            let id = event["uuid"]?.stringValue ?? name
            if properties?["$ip"] == nil, properties?["$geoip_disable"]?.boolValue != true { locatedHere.append(id) }
            if request.body.count > 1024 * 1024, item.serializedBytes().count > 1024 * 1024 { largeHere.append(id) }
            events.append(event)
        }
        lock.lock(); accepted += events; located += locatedHere; tooLarge += largeHere; lock.unlock()
        return .json(#"{"status":1}"#)
    }

    /// Breaks the cycle server → respond closure → fake.
    private final class WeakBox: @unchecked Sendable { weak var fake: PostHogFake? }
}
