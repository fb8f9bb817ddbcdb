import AnalyticsCore
import Foundation

/// Google Analytics 4's Measurement Protocol (`POST /mp/collect`) on 127.0.0.1. Like GA4 it
/// answers 204 to everything; unlike GA4 it says what GA4 would have dropped, in ``violations``
/// (what `/debug/mp/collect` reports as validation messages), so a test fails on a request GA4
/// would not count.
///
/// Checked: the path, `measurement_id` or `firebase_app_id` and `api_secret` in the query equal to
/// the stream's, a JSON body under 130 kB with `client_id` (web) or a 32-hex-digit
/// `app_instance_id` (app), 1 to 25 events, event names of at most 40 characters of
/// `[A-Za-z0-9_]` starting with a letter and not reserved, at most 25 params per event with
/// valid names and string values of at most 100 characters, user property names of at most 24
/// characters and values of at most 36, `timestamp_micros` at most 72 hours in the past (the
/// request's and each event's). Beyond what `/debug` reports, what would make GA4's reports wrong:
/// an event without a positive `engagement_time_msec` (GA4 counts no user for it), a `currency`
/// that is not ISO 4217, a `value` without currency, a `purchase` or `refund` without
/// `transaction_id` (or a purchase without currency), param values that are objects, arrays or
/// null (`items` aside), more than 200 items or an item with neither `item_id` nor `item_name`,
/// and user properties that hold an email address or are named for one (Google forbids personal
/// data there).
public final class GA4Fake: @unchecked Sendable {
    public let streamId: String
    public let apiSecret: String
    public let appStream: Bool
    public let server: LoopbackHTTPServer
    private let lock = NSLock()
    private var _responseDelay = 0.0
    private var accepted: [JSONObject] = []
    private var problems: [String] = []
    private var failures: [ScriptedResponse] = []
    /// Holds answers back on request (after the request was judged and its events taken).
    public let gate = AnswerGate()

    public init(streamId: String = "G-TEST12345", apiSecret: String = "ga4-secret", appStream: Bool = false) throws {
        self.streamId = streamId
        self.apiSecret = apiSecret
        self.appStream = appStream
        let box = WeakBox()
        server = try LoopbackHTTPServer(options: .init(respond: { request in box.fake?.answerThroughGate(request) }))
        box.fake = self
    }

    public var baseURL: String { server.baseURL }

    /// Seconds each accepted request waits before its answer (a slow GA4: uploads stay in
    /// flight long enough for a test to kill the client meanwhile).
    public var responseDelay: Double {
        get { lock.lock(); defer { lock.unlock() }; return _responseDelay }
        set { lock.lock(); _responseDelay = newValue; lock.unlock() }
    }

    /// The request bodies GA4 would have counted.
    public var bodies: [JSONObject] { lock.lock(); defer { lock.unlock() }; return accepted }
    /// Every event GA4 would have counted.
    public var events: [JSONObject] { bodies.flatMap { $0["events"]?.arrayValue?.compactMap(\.objectValue) ?? [] } }
    /// What GA4 would have dropped, and why.
    public var violations: [String] { lock.lock(); defer { lock.unlock() }; return problems }

    /// Answers the next request with `response` (a 5xx or 429 GA4 may answer) before looking at it.
    public func failNext(_ response: ScriptedResponse, times: Int = 1) {
        lock.lock(); failures += Array(repeating: response, count: times); lock.unlock()
    }

    static let reserved: Set<String> = ["ad_activeview", "ad_click", "ad_exposure", "ad_impression", "ad_query", "ad_reward",
                                        "adunit_exposure", "app_background", "app_clear_data", "app_exception", "app_install",
                                        "app_remove", "app_store_refund", "app_update", "app_upgrade", "error", "first_open",
                                        "first_visit", "in_app_purchase", "notification_dismiss", "notification_foreground",
                                        "notification_open", "notification_receive", "os_update", "session_start",
                                        "session_start_with_rollout", "user_engagement", "screen_view"]

    /// ISO 4217 codes, kept here independently of the library's own list.
    static let currencies: Set<String> = Set(("AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD "
        + "CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF "
        + "GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD "
        + "MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON "
        + "RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD "
        + "USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL")
        .split(separator: " ").map(String.init))

    static func validName(_ name: String, max: Int) -> Bool {
        guard let first = name.unicodeScalars.first, name.count <= max, first.isASCII, CharacterSet.letters.contains(first) else { return false }
        if ["_", "google_", "ga_", "firebase_"].contains(where: { name.hasPrefix($0) }) { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
    }

    private func answerThroughGate(_ request: RecordedRequest) -> ScriptedResponse {
        let response = answer(request)
        gate.pass()
        return response
    }

    func answer(_ request: RecordedRequest) -> ScriptedResponse {
        lock.lock()
        let failure = failures.isEmpty ? nil : failures.removeFirst()
        let delay = _responseDelay
        lock.unlock()
        if let failure { return failure }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        var found: [String] = []
        let parts = request.path.split(separator: "?", maxSplits: 1).map(String.init)
        let query = Dictionary((parts.count > 1 ? parts[1] : "").split(separator: "&").map { pair -> (String, String) in
            let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            return (kv[0], kv.count > 1 ? kv[1] : "")
        }, uniquingKeysWith: { a, _ in a })
        if request.method != "POST" || parts[0] != "/mp/collect" { found.append("not POST /mp/collect: \(request.method) \(parts[0])") }
        let streamKey = appStream ? "firebase_app_id" : "measurement_id"
        if query[streamKey] != streamId { found.append("\(streamKey) is \(query[streamKey] ?? "missing"), not \(streamId)") }
        if query["api_secret"] != apiSecret { found.append("api_secret is \(query["api_secret"] ?? "missing"), not the stream's") }
        if request.wireBodySize >= 130 * 1024 { found.append("body of \(request.wireBodySize) bytes, over 130 kB") }
        if let body = (try? JSON(parsing: request.body))?.objectValue {
            if appStream {
                let id = body["app_instance_id"]?.stringValue ?? ""
                if id.count != 32 || !id.allSatisfy(\.isHexDigit) { found.append("app_instance_id \"\(id)\" is not 32 hex digits") }
            } else if (body["client_id"]?.stringValue ?? "").isEmpty {
                found.append("client_id missing")
            }
            let oldest = Date().timeIntervalSince1970 - 72 * 3600
            if let micros = body["timestamp_micros"]?.intValue, Double(micros) / 1e6 < oldest {
                found.append("timestamp_micros more than 72 hours in the past")
            }
            for (name, value) in body["user_properties"]?.objectValue ?? [:] {
                if !Self.validName(name, max: 24) { found.append("user property name \"\(name)\" is invalid") }
                if let text = value["value"]?.stringValue, text.count > 36 { found.append("user property \(name) longer than 36") }
                if ["email", "phone", "e_mail", "phone_number"].contains(name.lowercased()) || value["value"]?.stringValue?.contains("@") == true {
                    found.append("user property \(name) holds personal data (Google forbids it)")
                }
            }
            let events = body["events"]?.arrayValue ?? []
            if events.isEmpty || events.count > 25 { found.append("\(events.count) events (1 to 25 allowed)") }
            for event in events {
                let name = event["name"]?.stringValue ?? ""
                if !Self.validName(name, max: 40) || Self.reserved.contains(name) { found.append("event name \"\(name)\" is invalid or reserved") }
                let params = event["params"]?.objectValue ?? [:]
                if params.count > 25 { found.append("\(name): \(params.count) params (at most 25)") }
                for (key, value) in params where key != "items" {
                    if !Self.validName(key, max: 40) { found.append("\(name): param name \"\(key)\" is invalid") }
                    if let text = value.stringValue, text.count > 100 { found.append("\(name): param \(key) longer than 100") }
                    if value.stringValue == nil && value.numberValue == nil && value.boolValue == nil {
                        found.append("\(name): param \(key) is not a string, number or boolean")
                    }
                }
                found += Self.reportProblems(name: name, params: params)
                if let micros = event["timestamp_micros"]?.intValue, Double(micros) / 1e6 < oldest {
                    found.append("\(name): timestamp_micros more than 72 hours in the past")
                }
            }
            lock.lock()
            if found.isEmpty { accepted.append(body) }
            lock.unlock()
        } else {
            found.append("the body is not a JSON object")
        }
        lock.lock(); problems += found; lock.unlock()
        return .status(204)
    }

    /// What would make GA4's reports wrong though GA4 takes it.
    static func reportProblems(name: String, params: JSONObject) -> [String] {
        var found: [String] = []
        if (params["engagement_time_msec"]?.doubleValue ?? 0) <= 0 {
            found.append("\(name): no positive engagement_time_msec (GA4 counts no user for it)")
        }
        if let currency = params["currency"] {
            if !(currency.stringValue.map(currencies.contains) ?? false) { found.append("\(name): currency \(currency) is not ISO 4217") }
        } else if params["value"] != nil {
            found.append("\(name): a value without currency")
        }
        if name == "purchase" || name == "refund", params["transaction_id"] == nil { found.append("\(name): no transaction_id") }
        if name == "purchase", params["currency"] == nil { found.append("purchase: no currency") }
        if let items = params["items"] {
            let list = items.arrayValue ?? []
            if items.arrayValue == nil { found.append("\(name): items is not an array") }
            if list.count > 200 { found.append("\(name): \(list.count) items (at most 200)") }
            for item in list where item["item_id"] == nil && item["item_name"] == nil {
                found.append("\(name): an item with neither item_id nor item_name")
            }
            for item in list {
                if let currency = item["currency"], !(currency.stringValue.map(currencies.contains) ?? false) {
                    found.append("\(name): item currency \(currency) is not ISO 4217")
                }
            }
        }
        return found
    }

    private final class WeakBox: @unchecked Sendable { weak var fake: GA4Fake? }
}
