import AnalyticsCore
import Foundation

/// What a Segment-compatible collector does with one request, apart from the socket: the batch
/// API (`/v1/b`, `/v1/batch`, `/v1/import`) and the single-call endpoints (`/v1/t` … `/v1/a` and
/// their long names), Basic auth checked against an optional write key, every event handed on as
/// one line of NDJSON with its bytes as received — plus what the tracking API adds: the batch's
/// `sentAt` on each event that has none, and `type` from a single-call endpoint when the body
/// lacks it. It refuses with 400 what the tracking API refuses: an event over
/// ``BatchLimits/maxEventBytes``, a batch body over ``BatchLimits/apiMaxBatchBytes`` or with more
/// than ``BatchLimits/maxBatchEvents`` events, an event nested deeper than
/// ``BatchLimits/maxEventDepth`` (the limit the upload checks when it accepts an event).
/// `analytics-host receive` serves it on a ``LoopbackHTTPServer``; tests can use it in-process.
public struct SegmentCollector: Sendable {
    /// A request taken: its events, each one NDJSON line (no newline), in order.
    public struct Accepted: Sendable {
        public var path: String
        public var lines: [[UInt8]]
    }

    /// When set, requests must carry it (Basic auth user, or `writeKey` in the body).
    public var writeKey: String?

    public init(writeKey: String? = nil) { self.writeKey = writeKey }

    static let batchPaths: Set<String> = ["/v1/b", "/v1/batch", "/v1/import"]
    /// Single-call endpoints and the event type each stands for.
    static let singleTypes: [String: String] = [
        "/v1/t": "track", "/v1/track": "track", "/v1/i": "identify", "/v1/identify": "identify",
        "/v1/s": "screen", "/v1/screen": "screen", "/v1/p": "page", "/v1/page": "page",
        "/v1/g": "group", "/v1/group": "group", "/v1/a": "alias", "/v1/alias": "alias",
    ]
    static var singlePaths: Set<String> { Set(singleTypes.keys) }

    /// The events of `request`, or the response that refuses it (status, code and a reason).
    public func take(_ request: RecordedRequest) -> Result<Accepted, Refusal> {
        let path = String(request.path.prefix { $0 != "?" })
        let isBatch = Self.batchPaths.contains(path)
        let singleType = Self.singleTypes[path]
        guard isBatch || singleType != nil else {
            return .failure(Refusal(status: 404, message: "no such endpoint \(path) (batch: /v1/b, /v1/batch; single: /v1/t|i|s|p|g|a)"))
        }
        guard request.method == "POST" else { return .failure(Refusal(status: 405, message: "\(request.method) \(path): only POST is accepted")) }
        if let problem = request.decodeError { return .failure(Refusal(status: 400, message: "gzip body could not be inflated: \(problem)")) }
        let body = request.body
        if isBatch, body.count > BatchLimits.apiMaxBatchBytes {
            return .failure(Refusal(status: 400, code: "batch_too_large",
                                    message: "batch body is \(body.count) bytes, over the limit of \(BatchLimits.apiMaxBatchBytes)"))
        }
        if !isBatch, body.count > BatchLimits.maxEventBytes {
            return .failure(Refusal(status: 400, code: "event_too_large",
                                    message: "event is \(body.count) bytes, over the limit of \(BatchLimits.maxEventBytes)"))
        }
        let parsed: JSON
        do {
            parsed = try body.withUnsafeBufferPointer { try JSON(parsingUTF8: $0) }
        } catch {
            return .failure(Refusal(status: 400, message: "body is not JSON: \(error)"))
        }
        guard case .object(let object) = parsed else { return .failure(Refusal(status: 400, message: "body is not a JSON object")) }
        if let writeKey {
            let given = Self.basicAuthUser(request.header("Authorization")) ?? object["writeKey"]?.stringValue
            guard let given else { return .failure(Refusal(status: 401, message: "no write key (Basic auth user or writeKey in the body)")) }
            guard given == writeKey else { return .failure(Refusal(status: 401, message: "wrong write key '\(given)'")) }
        }
        if let singleType {
            if parsed.nests(deeperThan: BatchLimits.maxEventDepth) { return .failure(Self.tooDeep(nil)) }
            var line = Self.oneLine(body[...])
            if object["type"] == nil { line = Self.adding("type", .string(singleType), to: line) }
            return .success(Accepted(path: path, lines: [line]))
        }
        guard case .array(let events)? = object["batch"] else {
            return .failure(Refusal(status: 400, message: "batch body has no \"batch\" array"))
        }
        guard events.count <= BatchLimits.maxBatchEvents else {
            return .failure(Refusal(status: 400, code: "batch_too_large",
                                    message: "batch of \(events.count) events, over the limit of \(BatchLimits.maxBatchEvents)"))
        }
        if let i = events.firstIndex(where: { $0.objectValue == nil }) {
            return .failure(Refusal(status: 400, message: "batch[\(i)] is not a JSON object"))
        }
        if let i = events.firstIndex(where: { $0.nests(deeperThan: BatchLimits.maxEventDepth) }) { return .failure(Self.tooDeep(i)) }
        // The bytes of each element as sent; serialised again only if the scan disagrees with the parser.
        var lines: [[UInt8]]
        if let spans = JSONSpans.batchElements(in: body), spans.count == events.count {
            lines = spans.map { Self.oneLine(body[$0]) }
        } else {
            lines = events.map { Array($0.serialized().utf8) }
        }
        if let i = lines.firstIndex(where: { $0.count > BatchLimits.maxEventBytes }) {
            return .failure(Refusal(status: 400, code: "event_too_large",
                                    message: "batch[\(i)] is \(lines[i].count) bytes, over the limit of \(BatchLimits.maxEventBytes) per event"))
        }
        if let sentAt = object["sentAt"], !sentAt.isNull {
            for i in lines.indices where events[i]["sentAt"] == nil { lines[i] = Self.adding("sentAt", sentAt, to: lines[i]) }
        }
        return .success(Accepted(path: path, lines: lines))
    }

    private static func tooDeep(_ index: Int?) -> Refusal {
        Refusal(status: 400, code: "nesting_too_deep",
                message: "\(index.map { "batch[\($0)]" } ?? "event") nests objects and arrays deeper than \(BatchLimits.maxEventDepth) levels")
    }

    /// `line` (one JSON object's text, ending in `}`) with `"key":value` added as its last member.
    static func adding(_ key: String, _ value: JSON, to line: [UInt8]) -> [UInt8] {
        guard let close = line.lastIndex(of: UInt8(ascii: "}")) else { return line }
        var before = close
        while before > 0, [0x20, 0x09].contains(line[before - 1]) { before -= 1 }
        let empty = before > 0 && line[before - 1] == UInt8(ascii: "{")
        var out = Array(line[..<close])
        if !empty { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: JSON.string(key).serialized().utf8)
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: value.serialized().utf8)
        out.append(contentsOf: line[close...])
        return out
    }

    /// A refused request: its HTTP status, a code clients can act on, and why, answered as
    /// `{"success":false,"code":…,"message":…}`.
    public struct Refusal: Error, Sendable {
        public var status: Int
        public var code: String
        public var message: String

        public init(status: Int, code: String? = nil, message: String) {
            self.status = status
            self.code = code ?? Refusal.code(for: status)
            self.message = message
        }

        public var response: ScriptedResponse { .error(status: status, code: code, message: message) }

        static func code(for status: Int) -> String {
            switch status {
            case 400: return "invalid_request"
            case 401: return "unauthorized"
            case 404: return "not_found"
            case 405: return "method_not_allowed"
            case 413: return "payload_too_large"
            default: return status >= 500 ? "server_error" : "invalid_request"
            }
        }
    }

    /// JSON text on one line: line breaks can only be whitespace between tokens in valid JSON
    /// (inside strings they are escaped), so they become spaces and nothing else changes.
    static func oneLine(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out = Array(bytes)
        for i in out.indices where out[i] == 0x0A || out[i] == 0x0D { out[i] = 0x20 }
        while let last = out.last, last == 0x20 || last == 0x09 { out.removeLast() }
        while let first = out.first, first == 0x20 || first == 0x09 { out.removeFirst() }
        return out
    }

    /// The user of `Authorization: Basic base64(user:password)`.
    static func basicAuthUser(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("basic ") else { return nil }
        let encoded = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let data = Data(base64Encoded: encoded) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        return String(text.prefix { $0 != ":" })
    }
}

/// Byte ranges inside JSON text that the parser has already accepted.
enum JSONSpans {
    /// The elements of the top-level object's "batch" array (the last one, as the parser keeps).
    static func batchElements(in b: [UInt8]) -> [Range<Int>]? {
        var i = 0
        func skipSpace() { while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 } }
        func skipString() {
            i += 1
            while i < b.count, b[i] != 0x22 { i += b[i] == 0x5C ? 2 : 1 }
            i += 1
        }
        func skipValue() {
            if b[i] == 0x22 { skipString(); return }
            if b[i] == 0x7B || b[i] == 0x5B {
                var depth = 0
                repeat {
                    switch b[i] {
                    case 0x22: skipString(); continue
                    case 0x7B, 0x5B: depth += 1
                    case 0x7D, 0x5D: depth -= 1
                    default: break
                    }
                    i += 1
                } while depth > 0 && i < b.count
                return
            }
            while i < b.count, ![0x2C, 0x7D, 0x5D, 0x20, 0x09, 0x0A, 0x0D].contains(b[i]) { i += 1 }
        }
        var found: [Range<Int>]?
        skipSpace()
        guard i < b.count, b[i] == 0x7B else { return nil }
        i += 1
        while true {
            skipSpace()
            guard i < b.count else { return nil }
            if b[i] == 0x7D { return found }
            if b[i] == 0x2C { i += 1; continue }
            guard b[i] == 0x22 else { return nil }
            let keyStart = i
            skipString()
            guard i <= b.count else { return nil }
            let key = (try? JSON(parsing: String(decoding: b[keyStart..<i], as: UTF8.self)).stringValue) ?? nil
            skipSpace()
            guard i < b.count, b[i] == 0x3A else { return nil }
            i += 1
            skipSpace()
            guard i < b.count else { return nil }
            if key == "batch", b[i] == 0x5B {
                var spans: [Range<Int>] = []
                i += 1
                while true {
                    skipSpace()
                    guard i < b.count else { return nil }
                    if b[i] == 0x5D { i += 1; break }
                    if b[i] == 0x2C { i += 1; continue }
                    let start = i
                    skipValue()
                    guard i <= b.count else { return nil }
                    spans.append(start..<i)
                }
                found = spans
            } else {
                skipValue()
            }
        }
    }
}
