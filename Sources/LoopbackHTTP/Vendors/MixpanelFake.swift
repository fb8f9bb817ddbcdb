import AnalyticsCore
import Foundation

/// Mixpanel's ingestion API on 127.0.0.1, strict: it answers what Mixpanel answers and refuses
/// what Mixpanel refuses, so a test fails when an integration sends a request the real service
/// would not take.
///
/// Endpoints, each `POST` with a JSON array body (`Content-Type: application/json`, gzip taken):
/// - `/import?strict=1|0`: events, authenticated with HTTP Basic auth whose user is the
///   project's API secret (401 otherwise). At most 2,000 events and 10 MB (413) per request.
///   Each event: a non-empty `event`, a `properties` object with an integer `time` (seconds or
///   milliseconds, not more than an hour ahead), a string `distinct_id`, an `$insert_id` of at most
///   36 letters, digits and '-', the project's `token` when one is given; `$merge` needs
///   `$distinct_ids` (two ids). With strict=1 a request with bad events answers 400 with
///   `failed_records` (index, $insert_id, field, message) and imports the others
///   (`num_records_imported`); with strict=0 the bad ones are dropped silently.
/// - `/track`: events authenticated by their `token`, no older than 5 days; `$create_alias` needs
///   `alias`; `$merge` is refused (it is /import only). One bad event refuses the request (400,
///   `{"error","status":0}`), nothing ingested.
/// - `/engage`, `/groups`: profile and group updates with the project's `$token`, exactly one
///   operation each (`$set`, `$set_once`, `$add`, `$union`, `$append`, `$remove`, `$unset`,
///   `$delete`), `$distinct_id` (profiles) or `$group_key` and `$group_id` (groups); one bad
///   update refuses the request (400).
/// Events are deduplicated by `$insert_id` (``uniqueEvents``), as Mixpanel does.
/// ``failNext(_:times:)`` queues failures (429, 503) answered before any check.
///
/// What Mixpanel takes but would not keep as sent is listed rather than refused, as Mixpanel gives
/// no error for it: a record located at the sender's address (a request without `ip=0` carrying a
/// record without its own `ip` / `$ip`: ``locatedAtSender``), properties past its documented limits
/// (more than 255 per event, names over 255, strings over 255 bytes, objects nested more than 3
/// deep: ``overLimits``).
public final class MixpanelFake: @unchecked Sendable {
    public let token: String
    public let apiSecret: String
    public let server: LoopbackHTTPServer
    private let lock = NSLock()
    private var acceptedEvents: [JSONObject] = []
    private var acceptedProfiles: [JSONObject] = []
    private var acceptedGroups: [JSONObject] = []
    private var refusals: [String] = []
    private var dropped = 0
    private var failures: [ScriptedResponse] = []
    private var _maxBodyBytes = 10_000_000
    private var arrivals: [Double] = []
    private var _responseDelay = 0.0
    private var atSender: [String] = []
    private var pastLimits: [String] = []

    /// Mixpanel's documented limits on event properties, and on profile and group updates (2,000
    /// properties a profile).
    static let limits = VendorPropertyLimits(maxKeys: 255, maxNameLength: 255, maxStringLength: 255, maxDepth: 3, characters: false)
    static let profileLimits = VendorPropertyLimits(maxKeys: 2000, maxNameLength: 255, maxStringLength: 255, maxDepth: 3, characters: false)

    static let maxEvents = 2000
    static let operations: Set<String> = ["$set", "$set_once", "$add", "$union", "$append", "$remove", "$unset", "$delete"]

    public init(token: String = "mp-test-project-token", apiSecret: String = "mp-test-api-secret", recordBodies: Bool = true) throws {
        self.token = token
        self.apiSecret = apiSecret
        let box = WeakBox()
        server = try LoopbackHTTPServer(options: .init(recordBodies: recordBodies, respond: { request in box.fake?.answer(request) }))
        box.fake = self
    }

    /// `http://127.0.0.1:PORT`: the `apiHost` to give the integration.
    public var baseURL: String { server.baseURL }

    /// Every event ingested (/import and /track), in arrival order, duplicates included.
    public var events: [JSONObject] { lock.lock(); defer { lock.unlock() }; return acceptedEvents }
    /// Every profile update taken by /engage, in order.
    public var profileUpdates: [JSONObject] { lock.lock(); defer { lock.unlock() }; return acceptedProfiles }
    /// Every group update taken by /groups, in order.
    public var groupUpdates: [JSONObject] { lock.lock(); defer { lock.unlock() }; return acceptedGroups }
    /// Why each refused request (or refused record) was refused: status and Mixpanel's text.
    public var refused: [String] { lock.lock(); defer { lock.unlock() }; return refusals }
    /// The records Mixpanel would locate at the sender's address: `$insert_id` of an event,
    /// `$distinct_id` of a profile update, `$group_id` of a group update.
    public var locatedAtSender: [String] { lock.lock(); defer { lock.unlock() }; return atSender }

    /// The records sent past Mixpanel's documented limits, with what was over (Mixpanel would cut
    /// or drop it silently).
    public var overLimits: [String] { lock.lock(); defer { lock.unlock() }; return pastLimits }

    /// Events strict=0 dropped without a word.
    public var silentlyDropped: Int { lock.lock(); defer { lock.unlock() }; return dropped }

    /// The events Mixpanel would count: the first of each `$insert_id`.
    public var uniqueEvents: [JSONObject] {
        var seen: Set<String> = []
        return events.filter { event in
            guard let id = event["properties"]?["$insert_id"]?.stringValue else { return true }
            return seen.insert(id).inserted
        }
    }

    public var maxBodyBytes: Int {
        get { lock.lock(); defer { lock.unlock() }; return _maxBodyBytes }
        set { lock.lock(); _maxBodyBytes = newValue; lock.unlock() }
    }

    /// When each request arrived (monotonic seconds), in order: the waits between attempts.
    public var requestTimes: [Double] { lock.lock(); defer { lock.unlock() }; return arrivals }

    /// Seconds each request that reached the checks waits, after what it carried was ingested,
    /// before its answer goes out: a slow vendor (a client killed meanwhile had its batch
    /// ingested, unacknowledged).
    public var responseDelay: Double {
        get { lock.lock(); defer { lock.unlock() }; return _responseDelay }
        set { lock.lock(); _responseDelay = newValue; lock.unlock() }
    }

    /// Answers the next `times` requests with `response` before looking at them.
    public func failNext(_ response: ScriptedResponse, times: Int = 1) {
        lock.lock(); failures += Array(repeating: response, count: times); lock.unlock()
    }

    private func note(_ text: String) { lock.lock(); refusals.append(text); lock.unlock() }

    /// /track, /engage and /groups refuse like this.
    private func refuse(_ status: Int, _ error: String) -> ScriptedResponse {
        note("\(status) \(error)")
        return .json(JSON.object(["error": .string(error), "status": 0]).serialized(), status: status)
    }

    /// /import refuses like this.
    private func refuseImport(_ status: Int, _ error: String, _ label: String) -> ScriptedResponse {
        note("\(status) \(error)")
        return .json(JSON.object(["code": .number(JSONNumber(status)), "error": .string(error), "status": .string(label)]).serialized(), status: status)
    }

    func answer(_ request: RecordedRequest) -> ScriptedResponse {
        lock.lock()
        arrivals.append(monotonicSeconds())
        let failure = failures.isEmpty ? nil : failures.removeFirst()
        let delay = _responseDelay
        lock.unlock()
        if let failure { return failure }
        let response = check(request)
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        return response
    }

    /// The checks, and the answer, of a request no failure was queued for.
    private func check(_ request: RecordedRequest) -> ScriptedResponse {
        let maxBytes = maxBodyBytes
        let parts = request.path.split(separator: "?", maxSplits: 1).map(String.init)
        let path = parts[0]
        let query = Dictionary(parts.count > 1 ? parts[1].split(separator: "&").map { pair -> (String, String) in
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (kv[0], kv.count > 1 ? kv[1] : "")
        } : [], uniquingKeysWith: { _, last in last })
        guard request.method == "POST", ["/import", "/track", "/engage", "/groups"].contains(path) else {
            return refuse(404, "no such endpoint: \(request.method) \(request.path)")
        }
        let isImport = path == "/import"
        if isImport {
            let expected = "Basic " + Data((apiSecret + ":").utf8).base64EncodedString()
            guard request.header("Authorization") == expected else {
                return refuseImport(401, "Invalid credentials: /import needs the project's API secret (or a service account) as Basic auth", "Unauthorized")
            }
        }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return isImport ? refuseImport(400, "Content-Type must be application/json", "Bad Request") : refuse(400, "Content-Type must be application/json")
        }
        if request.decodeError != nil { return isImport ? refuseImport(400, "unable to decompress the gzip body", "Bad Request") : refuse(400, "unable to decompress the body") }
        guard request.body.count <= maxBytes else {
            return isImport ? refuseImport(413, "request body too large: \(request.body.count) bytes, at most \(maxBytes)", "Payload Too Large")
                : refuse(413, "request body too large")
        }
        guard let list = (try? JSON(parsing: request.body))?.arrayValue else {
            return isImport ? refuseImport(400, "unable to parse the body as a JSON array", "Bad Request") : refuse(400, "unable to parse the body as a JSON array")
        }
        guard !list.isEmpty, list.count <= Self.maxEvents else {
            let text = "a request takes 1 to \(Self.maxEvents) records, not \(list.count)"
            return isImport ? refuseImport(400, text, "Bad Request") : refuse(400, text)
        }
        note(list, path: path, locatedAtSender: query["ip"] != "0")
        switch path {
        case "/import": return importEvents(list, strict: query["strict"] != "0")
        case "/track": return trackEvents(list)
        case "/engage": return updates(list, profiles: true)
        default: return updates(list, profiles: false)
        }
    }

    /// Lists the records of a request that Mixpanel would locate at the sender or keep only in part.
    private func note(_ list: [JSON], path: String, locatedAtSender: Bool) {
        var located: [String] = [], over: [String] = []
        for item in list {
            guard let record = item.objectValue else { continue }
            let events = path == "/import" || path == "/track"
            let id = (events ? record["properties"]?["$insert_id"] : record["$distinct_id"] ?? record["$group_id"])?.stringValue ?? "?"
            let ownAddress = events ? record["properties"]?["ip"] : record["$ip"]
            if locatedAtSender, path != "/groups", ownAddress == nil { located.append(id) }
            let checked: [JSONObject] = events ? [record["properties"]?.objectValue].compactMap { $0 }
                : Self.operations.compactMap { record[$0]?.objectValue }
            let limits = events ? Self.limits : Self.profileLimits
            if let problem = checked.lazy.compactMap({ limits.problem($0) }).first { over.append("\(id): \(problem)") }
        }
        lock.lock(); atSender += located; pastLimits += over; lock.unlock()
    }

    /// Why Mixpanel would refuse one event: (field, message), or nil.
    private func problem(_ item: JSON, track: Bool) -> (String, String)? {
        guard let event = item.objectValue else { return ("event", "an event must be an object") }
        guard let name = event["event"]?.stringValue, !name.isEmpty else { return ("event", "'event' must be a non-empty string") }
        guard let properties = event["properties"]?.objectValue else { return ("properties", "'properties' must be an object") }
        guard let time = properties["time"]?.numberValue, !time.text.contains("."), let value = time.intValue else {
            return ("properties.time", "'properties.time' must be an integer (seconds or milliseconds since 1970)")
        }
        let nowMs = Int(Date().timeIntervalSince1970 * 1000)
        let ms = value < 100_000_000_000 ? value * 1000 : value
        if ms > nowMs + 3_600_000 { return ("properties.time", "'properties.time' is more than an hour in the future") }
        if track, ms < nowMs - 5 * 86_400_000 { return ("properties.time", "'properties.time' is older than 5 days: send it to /import") }
        guard let distinct = properties["distinct_id"] else { return ("properties.distinct_id", "'properties.distinct_id' is missing") }
        guard distinct.stringValue != nil || distinct.numberValue != nil else { return ("properties.distinct_id", "'properties.distinct_id' must be a string") }
        guard let insert = properties["$insert_id"]?.stringValue else { return ("properties.$insert_id", "'properties.$insert_id' is missing") }
        if insert.isEmpty || insert.utf8.count > 36 || !insert.unicodeScalars.allSatisfy({ ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" }) {
            return ("properties.$insert_id", "'properties.$insert_id' must be 1 to 36 letters, digits or '-'")
        }
        if let given = properties["token"] {
            if given.stringValue != token { return ("properties.token", "'properties.token' is not this project's token") }
        } else if track {
            return ("properties.token", "'properties.token' is missing")
        }
        if name == "$merge" {
            if track { return ("event", "$merge is taken by /import only") }
            guard let ids = properties["$distinct_ids"]?.arrayValue, ids.count == 2, ids.allSatisfy({ $0.stringValue != nil }) else {
                return ("properties.$distinct_ids", "$merge needs '$distinct_ids', two ids")
            }
        }
        if name == "$create_alias", properties["alias"]?.stringValue?.isEmpty != false {
            return ("properties.alias", "$create_alias needs 'alias'")
        }
        return nil
    }

    private func importEvents(_ list: [JSON], strict: Bool) -> ScriptedResponse {
        var failed: [JSON] = [], good: [JSONObject] = []
        for (index, item) in list.enumerated() {
            if let (field, message) = problem(item, track: false) {
                failed.append(["index": .number(JSONNumber(index)), "$insert_id": item["properties"]?["$insert_id"] ?? .null,
                               "field": .string(field), "message": .string(message)])
            } else if let event = item.objectValue {
                good.append(event)
            }
        }
        lock.lock()
        acceptedEvents += good
        if !strict { dropped += failed.count }
        lock.unlock()
        if strict, !failed.isEmpty {
            for f in failed { note("400 record \(f["index"]?.intValue ?? -1) (\(f["$insert_id"]?.stringValue ?? "?")): \(f["message"]?.stringValue ?? "")") }
            let body: JSON = ["code": 400, "error": "some data points in the request failed validation", "failed_records": .array(failed),
                              "num_records_imported": .number(JSONNumber(good.count)), "status": "Bad Request"]
            return .json(body.serialized(), status: 400)
        }
        return .json(#"{"code":200,"num_records_imported":\#(good.count),"status":"OK"}"#)
    }

    private func trackEvents(_ list: [JSON]) -> ScriptedResponse {
        for (index, item) in list.enumerated() {
            if let (_, message) = problem(item, track: true) { return refuse(400, "event \(index): \(message)") }
        }
        lock.lock(); acceptedEvents += list.compactMap(\.objectValue); lock.unlock()
        return .json(#"{"error":null,"status":1}"#)
    }

    private func updates(_ list: [JSON], profiles: Bool) -> ScriptedResponse {
        for (index, item) in list.enumerated() {
            guard let update = item.objectValue else { return refuse(400, "update \(index): an update must be an object") }
            guard update["$token"]?.stringValue == token else { return refuse(400, "update \(index): '$token' is missing or not this project's token") }
            if profiles {
                guard let id = update["$distinct_id"]?.stringValue, !id.isEmpty else { return refuse(400, "update \(index): '$distinct_id' is missing") }
            } else {
                guard update["$group_key"]?.stringValue?.isEmpty == false, update["$group_id"]?.stringValue?.isEmpty == false else {
                    return refuse(400, "update \(index): '$group_key' and '$group_id' are required")
                }
            }
            let ops = update.keys.filter { Self.operations.contains($0) }
            guard ops.count == 1 else { return refuse(400, "update \(index): exactly one operation per update, not \(ops.sorted())") }
            if ops[0] != "$unset", ops[0] != "$remove", update[ops[0]]?.objectValue == nil, ops[0] != "$delete" {
                return refuse(400, "update \(index): '\(ops[0])' must be an object")
            }
        }
        lock.lock()
        if profiles { acceptedProfiles += list.compactMap(\.objectValue) } else { acceptedGroups += list.compactMap(\.objectValue) }
        lock.unlock()
        return .json(#"{"error":null,"status":1}"#)
    }

    /// Breaks the cycle server → respond closure → fake.
    private final class WeakBox: @unchecked Sendable { weak var fake: MixpanelFake? }
}
