import AnalyticsCore
import Foundation

/// Amplitude's HTTP V2 API (`POST /2/httpapi`) on 127.0.0.1, strict: it answers what Amplitude
/// answers and refuses what Amplitude refuses, so a test fails when an integration sends a
/// request the real service would not take.
///
/// Checked, as Amplitude documents: the method and path, `Content-Type: application/json`, a
/// JSON object body with `api_key` (missing: 400 `missing_field`; unknown: 400 `Invalid API
/// key`) and a non-empty `events` array of at most 2,000 events, the body at most 1 MB (413).
/// Per event: a non-empty `event_type`, a `user_id` or `device_id`, ids of at least 5 characters
/// (or `options.min_id_length`), an integer `time`, a string `insert_id`, objects for
/// `event_properties`, `user_properties`, `groups` and `group_properties`. One bad event refuses
/// the whole request with a 400 naming its index (`events_with_missing_fields`,
/// `events_with_invalid_fields`, `events_with_invalid_id_lengths`), and nothing is ingested, as
/// with Amplitude. Events are deduplicated by `insert_id` (``uniqueEvents``), as Amplitude does.
/// ``failNext(_:times:)`` queues failures (429, 503) answered before any check.
///
/// What Amplitude takes but would not keep as sent is listed rather than refused, as Amplitude
/// gives no error for it: an event located at the sender's address (`ip` `"$remote"`,
/// ``locatedAtSender``), properties past its documented limits (more than 1,024, strings or names
/// over 1,024 characters: ``overLimits``).
public final class AmplitudeFake: @unchecked Sendable {
    public let apiKey: String
    public let server: LoopbackHTTPServer
    private let lock = NSLock()
    private var accepted: [JSONObject] = []
    private var refusals: [String] = []
    private var failures: [ScriptedResponse] = []
    private var _maxBodyBytes = 1_000_000
    private var _maxEvents = 2000
    private var arrivals: [Double] = []
    private var _responseDelay = 0.0
    private var atSender: [String] = []
    private var invalidWhen: (@Sendable (JSONObject) -> Bool)?
    private var pastLimits: [String] = []

    /// Amplitude's documented limits on event, user and group properties.
    static let limits = VendorPropertyLimits(maxKeys: 1024, maxNameLength: 1024, maxStringLength: 1024, maxDepth: 0, characters: true)

    public init(apiKey: String = "amp-test-api-key") throws {
        self.apiKey = apiKey
        let box = WeakBox()
        server = try LoopbackHTTPServer(options: .init(respond: { request in box.fake?.answer(request) }))
        box.fake = self
    }

    /// `http://127.0.0.1:PORT`: the `apiHost` to give the integration.
    public var baseURL: String { server.baseURL }

    /// Every event ingested, in arrival order, duplicates included.
    public var events: [JSONObject] { lock.lock(); defer { lock.unlock() }; return accepted }

    /// The events Amplitude would count: the first of each `insert_id` (events without one all count).
    public var uniqueEvents: [JSONObject] {
        var seen: Set<String> = []
        return events.filter { event in
            guard let id = event["insert_id"]?.stringValue else { return true }
            return seen.insert(id).inserted
        }
    }

    /// The insert_ids of the events Amplitude would locate at the sender's address (`ip` "$remote").
    public var locatedAtSender: [String] { lock.lock(); defer { lock.unlock() }; return atSender }

    /// The events sent past Amplitude's documented limits, with what was over (Amplitude would
    /// cut or drop it silently).
    public var overLimits: [String] { lock.lock(); defer { lock.unlock() }; return pastLimits }

    /// Why each refused request was refused (status and Amplitude's error text).
    public var refused: [String] { lock.lock(); defer { lock.unlock() }; return refusals }

    public var maxBodyBytes: Int {
        get { lock.lock(); defer { lock.unlock() }; return _maxBodyBytes }
        set { lock.lock(); _maxBodyBytes = newValue; lock.unlock() }
    }

    /// When each request arrived (monotonic seconds), in order: the waits between attempts.
    public var requestTimes: [Double] { lock.lock(); defer { lock.unlock() }; return arrivals }

    /// Seconds each accepted request waits, after its events were ingested, before its answer
    /// goes out: a slow vendor (a client killed meanwhile had its batch ingested, unacknowledged).
    public var responseDelay: Double {
        get { lock.lock(); defer { lock.unlock() }; return _responseDelay }
        set { lock.lock(); _responseDelay = newValue; lock.unlock() }
    }

    /// Answers the next `times` requests with `response` before looking at them.
    public func failNext(_ response: ScriptedResponse, times: Int = 1) {
        lock.lock(); failures += Array(repeating: response, count: times); lock.unlock()
    }

    /// Refuses every event for which `predicate` holds as Amplitude refuses an event with an
    /// invalid field (400 naming it in `events_with_invalid_fields`, nothing of its request
    /// ingested): a rule of the vendor's that the library cannot know in advance.
    public func refuseEvents(where predicate: @escaping @Sendable (JSONObject) -> Bool) {
        lock.lock(); invalidWhen = predicate; lock.unlock()
    }

    private func refuse(_ status: Int, _ body: JSONObject) -> ScriptedResponse {
        var body = body
        body["code"] = .number(JSONNumber(status))
        lock.lock(); refusals.append("\(status) \(body["error"]?.stringValue ?? "")"); lock.unlock()
        return .json(JSON.object(body).serialized(), status: status)
    }

    func answer(_ request: RecordedRequest) -> ScriptedResponse {
        lock.lock()
        arrivals.append(monotonicSeconds())
        let failure = failures.isEmpty ? nil : failures.removeFirst()
        let maxBytes = _maxBodyBytes, maxEvents = _maxEvents, invalidWhen = invalidWhen
        lock.unlock()
        if let failure { return failure }
        guard request.method == "POST", request.path == "/2/httpapi" || request.path == "/batch" else {
            return refuse(404, ["error": .string("no such endpoint: \(request.method) \(request.path)")])
        }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return refuse(400, ["error": .string("Invalid request: Content-Type must be application/json")])
        }
        guard request.wireBodySize <= maxBytes else { return refuse(413, ["error": "Payload too large"]) }
        guard let object = (try? JSON(parsing: request.body))?.objectValue else {
            return refuse(400, ["error": "Invalid request: the body is not a JSON object"])
        }
        guard let key = object["api_key"]?.stringValue, !key.isEmpty else {
            return refuse(400, ["error": "Request missing required field", "missing_field": "api_key"])
        }
        guard key == apiKey else { return refuse(400, ["error": .string("Invalid API key: \(key)")]) }
        guard let list = object["events"]?.arrayValue, !list.isEmpty else {
            return refuse(400, ["error": "Request missing required field", "missing_field": "events"])
        }
        guard list.count <= maxEvents else {
            return refuse(400, ["error": .string("Too many events in the request: \(list.count), at most \(maxEvents)")])
        }
        let minLength = object["options"]?["min_id_length"]?.intValue ?? 5
        var missing: [String: [Int]] = [:], invalid: [String: [Int]] = [:], short: [String: [Int]] = [:]
        var events: [JSONObject] = []
        for (index, item) in list.enumerated() {
            guard let event = item.objectValue else { invalid["event", default: []].append(index); continue }
            if (event["event_type"]?.stringValue ?? "").isEmpty { missing["event_type", default: []].append(index) }
            let user = event["user_id"]?.stringValue, device = event["device_id"]?.stringValue
            if user == nil && device == nil { missing["user_id", default: []].append(index) }
            if let user, user.count < minLength { short["user_id", default: []].append(index) }
            if let device, device.count < minLength { short["device_id", default: []].append(index) }
            if let time = event["time"], time.numberValue?.intValue == nil || time.numberValue?.text.contains(".") == true {
                invalid["time", default: []].append(index)
            }
            if let id = event["insert_id"], id.stringValue == nil { invalid["insert_id", default: []].append(index) }
            for field in ["event_properties", "user_properties", "groups", "group_properties"] {
                if let value = event[field], value.objectValue == nil { invalid[field, default: []].append(index) }
            }
            for field in ["revenue", "price", "location_lat", "location_lng"] {
                if let value = event[field], value.numberValue == nil { invalid[field, default: []].append(index) }
            }
            if let value = event["quantity"], value.intValue == nil { invalid["quantity", default: []].append(index) }
            if let invalidWhen, invalidWhen(event) { invalid["event_properties", default: []].append(index) }
            events.append(event)
        }
        func indexMap(_ map: [String: [Int]]) -> JSON { .object(JSONObject(map.map { ($0.key, JSON.array($0.value.map { .number(JSONNumber($0)) })) })) }
        if !missing.isEmpty || !invalid.isEmpty {
            var body: JSONObject = ["error": "Request missing required field"]
            if !missing.isEmpty { body["events_with_missing_fields"] = indexMap(missing) }
            if !invalid.isEmpty { body["error"] = "Invalid field values on some events"; body["events_with_invalid_fields"] = indexMap(invalid) }
            return refuse(400, body)
        }
        if !short.isEmpty {
            return refuse(400, ["error": "Invalid id length for user_id or device_id", "events_with_invalid_id_lengths": indexMap(short)])
        }
        var located: [String] = [], over: [String] = []
        for event in events {
            let id = event["insert_id"]?.stringValue ?? "?"
            if event["ip"]?.stringValue == "$remote" { located.append(id) }
            let groups: [JSONObject] = ["event_properties", "user_properties", "group_properties"].flatMap { field -> [JSONObject] in
                guard let value = event[field]?.objectValue else { return [] }
                return field == "event_properties" ? [value] : value.values.compactMap(\.objectValue)
            }
            if let problem = groups.lazy.compactMap({ Self.limits.problem($0) }).first { over.append("\(id): \(problem)") }
        }
        lock.lock(); accepted += events; atSender += located; pastLimits += over; let delay = _responseDelay; lock.unlock()
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        let now = Int(Date().timeIntervalSince1970 * 1000)
        return .json(#"{"code":200,"events_ingested":\#(events.count),"payload_size_bytes":\#(request.wireBodySize),"server_upload_time":\#(now)}"#)
    }

    /// Breaks the cycle server → respond closure → fake.
    private final class WeakBox: @unchecked Sendable { weak var fake: AmplitudeFake? }
}
