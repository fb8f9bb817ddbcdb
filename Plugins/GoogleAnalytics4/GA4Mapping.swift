import AnalyticsIntegration
import Foundation

/// Segment events as Measurement Protocol events, mapped as Segment's "Google Analytics 4 Cloud"
/// destination maps them by default (segmentio/action-destinations), and checked against the
/// rules GA4 enforces by dropping silently: here what GA4 would drop is refused with the reason,
/// and what is over a GA4 limit is cut as GA4 would cut it and reported, with the messageId.
///
/// The event's JSON is written straight into its request bytes (``GA4Event``): no object per field.
struct GA4Mapping {
    struct Refused: Error, Equatable { var reason: String }

    /// Settings that change the mapping.
    struct Options: Equatable {
        /// `engagement_time_msec` of events that carry none (GA4 counts no user without it;
        /// Segment sends 1).
        var engagementTimeMsec = 1
        /// Trait name → user property name: traits of the event's `context.traits` sent as
        /// `user_properties` (none by default: GA4 forbids personal data there).
        var userProperties: [(trait: String, property: String)] = []
        /// Segment's "Lowercase Event Name".
        var lowercaseEventNames = false
        /// GA4 drops events older than 72 hours; refused here instead.
        var maxAgeSeconds = 72.0 * 3600

        static func == (a: Options, b: Options) -> Bool {
            a.engagementTimeMsec == b.engagementTimeMsec && a.lowercaseEventNames == b.lowercaseEventNames
                && a.maxAgeSeconds == b.maxAgeSeconds && a.userProperties.map(\.trait) == b.userProperties.map(\.trait)
                && a.userProperties.map(\.property) == b.userProperties.map(\.property)
        }
    }

    static let maxNameLength = 40
    static let maxParams = 25
    static let maxParamValueLength = 100
    static let maxItems = 200
    static let maxUserPropertyNameLength = 24
    static let maxUserPropertyValueLength = 36

    /// Names the Measurement Protocol reserves (GA4 drops events that use them).
    static let reservedNames: Set<String> = [
        "ad_activeview", "ad_click", "ad_exposure", "ad_impression", "ad_query", "ad_reward", "adunit_exposure",
        "app_background", "app_clear_data", "app_exception", "app_install", "app_remove", "app_store_refund",
        "app_store_subscription_cancel", "app_store_subscription_convert", "app_store_subscription_renew",
        "app_update", "app_upgrade", "dynamic_link_app_open", "dynamic_link_app_update", "dynamic_link_first_open",
        "error", "first_open", "first_visit", "in_app_purchase", "notification_dismiss", "notification_foreground",
        "notification_open", "notification_receive", "os_update", "session_start", "session_start_with_rollout",
        "user_engagement", "screen_view",
    ]
    static let reservedPrefixes = ["_", "google_", "ga_", "firebase_"]

    let options: Options

    /// One event ready for a request: its key (the request-level user fields every event of a
    /// request shares), those fields' JSON, and the event's own JSON.
    struct GA4Event {
        var key: String
        var userFields: [UInt8]
        var event: [UInt8]
        var micros: Int?
        /// What was cut to GA4's limits (reported by the caller with the messageId).
        var trimmed: [String]
    }

    /// The GA4 event for one Segment call, nil when the call maps to none (identify, alias).
    func map(_ event: Event, appStream: Bool, now: Double) throws(Refused) -> GA4Event? {
        let id = event.messageId ?? "without messageId"
        var draft = GA4Params()
        let name: String
        let properties = event.properties
        switch event.type {
        case .identify, .alias:
            return nil
        case .track:
            guard let raw = event.event, !raw.isEmpty else { throw Refused(reason: "Google Analytics 4: the track event \(id) has no event name") }
            if let spec = GA4Recommended.events[raw] {
                name = spec.name
                try spec.fill(&draft, properties, messageId: id)
            } else {
                name = try customName(raw, messageId: id, trimmed: &draft.trimmed)
            }
        case .page:
            name = "page_view"
            let page = event.context["page"]?.objectValue ?? [:]
            draft.fixed("page_location", page["url"] ?? properties["url"], consumes: "url")
            draft.fixed("page_referrer", page["referrer"] ?? properties["referrer"], consumes: "referrer")
            draft.fixed("page_title", page["title"] ?? properties["title"] ?? event.name.map(JSON.string), consumes: "title")
        case .screen:
            // `screen_view` is reserved for GA4's own SDKs.
            name = "screen_viewed"
            draft.fixed("screen_name", event.name.map(JSON.string))
        case .group:
            guard let group = event.groupId, !group.isEmpty else { throw Refused(reason: "Google Analytics 4: the group event \(id) has no groupId") }
            name = "join_group"
            draft.fixed("group_id", .string(group))
        }
        // Session and engagement (GA4 counts no user without engagement_time_msec).
        let option = event.integrations["Google Analytics 4"]?.objectValue
        draft.fixed("session_id", properties["session_id"] ?? option?["session_id"], consumes: "session_id")
        draft.fixed("session_number", properties["session_number"] ?? option?["session_number"], consumes: "session_number")
        let engagement = properties["engagement_time_msec"].flatMap { $0.numberValue != nil ? $0 : nil }
        draft.fixed("engagement_time_msec", engagement ?? .number(JSONNumber(options.engagementTimeMsec)), consumes: "engagement_time_msec")
        if event.type != .group { draft.rest(properties, messageId: id) }

        // The event's time: GA4 drops events older than 72 hours without a word.
        var micros: Int?
        if let timestamp = event.timestamp, !timestamp.isEmpty {
            guard let parsed = ISO8601Timestamp.microseconds(timestamp) else {
                throw Refused(reason: "Google Analytics 4: event \(id) has a timestamp \"\(timestamp)\" that is not ISO-8601")
            }
            let age = now - Double(parsed) / 1e6
            if age > options.maxAgeSeconds {
                throw Refused(reason: "Google Analytics 4: event \(id) happened at \(timestamp), \(Int(age / 3600)) hours ago; GA4 drops events older than \(Int(options.maxAgeSeconds / 3600)) hours, so it is not sent")
            }
            micros = parsed
        }

        var out = JSONOutput(capacity: 64 + draft.params.bytes.count)
        out.raw("{\"name\":")
        out.string(name)
        out.raw(",\"params\":{")
        out.append(draft.params.bytes)
        out.byte(UInt8(ascii: "}"))
        if let micros {
            out.raw(",\"timestamp_micros\":")
            out.number(micros)
        }
        out.byte(UInt8(ascii: "}"))

        let (key, user) = try userFields(event, appStream: appStream, messageId: id, trimmed: &draft.trimmed)
        return GA4Event(key: key, userFields: user, event: out.bytes, micros: micros, trimmed: draft.trimmed)
    }

    /// `client_id` (web: userId, else anonymousId, as Segment) or `app_instance_id` (app: the
    /// anonymousId's UUID without dashes), `user_id`, `user_properties` from the settings' map.
    private func userFields(_ event: Event, appStream: Bool, messageId id: String, trimmed: inout [String]) throws(Refused) -> (String, [UInt8]) {
        let userId = event.userId.flatMap { $0.isEmpty ? nil : $0 }
        let anonymousId = event.anonymousId.flatMap { $0.isEmpty ? nil : $0 }
        var out = JSONOutput(capacity: 96)
        if appStream {
            guard let anonymous = anonymousId else {
                throw Refused(reason: "Google Analytics 4: event \(id) has no anonymousId for the app stream's app_instance_id")
            }
            let hex = anonymous.replacingOccurrences(of: "-", with: "").lowercased()
            guard hex.utf8.count == 32, hex.allSatisfy(\.isHexDigit) else {
                throw Refused(reason: "Google Analytics 4: event \(id): anonymousId \"\(anonymous)\" is no UUID, so it cannot be an app_instance_id (32 hex digits)")
            }
            out.raw("\"app_instance_id\":")
            out.string(hex)
        } else {
            guard let client = userId ?? anonymousId else {
                throw Refused(reason: "Google Analytics 4: event \(id) has neither userId nor anonymousId for client_id")
            }
            out.raw("\"client_id\":")
            out.string(client)
        }
        if let userId {
            out.raw(",\"user_id\":")
            out.string(userId)
        }
        if !options.userProperties.isEmpty {
            let traits = event.context["traits"]?.objectValue ?? (event.type == .identify ? event.traits : [:])
            var first = true
            for (trait, property) in options.userProperties {
                guard let value = traits[trait] else { continue }
                var written: JSON
                switch value {
                case .string(let text):
                    written = value
                    if text.count > Self.maxUserPropertyValueLength {
                        written = .string(String(text.prefix(Self.maxUserPropertyValueLength)))
                        trimmed.append("user property \(property) cut to \(Self.maxUserPropertyValueLength) characters")
                    }
                case .number, .bool: written = value
                default:
                    trimmed.append("trait \(trait) left out of user_properties (GA4 takes no objects, arrays or null)")
                    continue
                }
                out.raw(first ? ",\"user_properties\":{" : ",")
                first = false
                out.string(property)
                out.raw(":{\"value\":")
                out.value(written)
                out.byte(UInt8(ascii: "}"))
            }
            if !first { out.byte(UInt8(ascii: "}")) }
        }
        return (String(decoding: out.bytes, as: UTF8.self), out.bytes)
    }

    /// A custom event's name, as Segment makes it (trimmed, whitespace → `_`, lowercased when
    /// asked), then valid for GA4: other characters than `[A-Za-z0-9_]` → `_`, cut to 40
    /// (reported); refused when it does not start with a letter or is reserved.
    func customName(_ text: String, messageId id: String, trimmed: inout [String]) throws(Refused) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.trimmingCharacters(in: .whitespacesAndNewlines).unicodeScalars {
            scalars.append(Self.isNameScalar(scalar) ? scalar : "_")
        }
        var name = String(scalars)
        if options.lowercaseEventNames { name = name.lowercased() }
        if name.utf8.count > Self.maxNameLength {
            name = String(name.prefix(Self.maxNameLength))
            trimmed.append("event name cut to \(Self.maxNameLength) characters (\"\(name)\")")
        }
        guard let first = name.unicodeScalars.first, Self.isLetter(first) else {
            throw Refused(reason: "Google Analytics 4: event \(id): \"\(text)\" cannot be a GA4 event name (it must start with a letter)")
        }
        if Self.reservedNames.contains(name) || Self.reservedPrefixes.contains(where: { name.hasPrefix($0) }) {
            throw Refused(reason: "Google Analytics 4: event \(id): \"\(name)\" is a name the Measurement Protocol reserves")
        }
        return name
    }

    @inline(__always) static func isLetter(_ s: Unicode.Scalar) -> Bool {
        (s.value >= 0x41 && s.value <= 0x5A) || (s.value >= 0x61 && s.value <= 0x7A)
    }

    @inline(__always) static func isNameScalar(_ s: Unicode.Scalar) -> Bool {
        isLetter(s) || (s.value >= 0x30 && s.value <= 0x39) || s == "_"
    }

    /// A parameter name GA4 takes: at most 40 of `[A-Za-z0-9_]`, starting with a letter, not
    /// reserved. Others are left out (and reported).
    static func isParamName(_ name: String) -> Bool {
        guard name.utf8.count <= maxNameLength, let first = name.unicodeScalars.first, isLetter(first) else { return false }
        guard name.unicodeScalars.allSatisfy(isNameScalar) else { return false }
        return !reservedPrefixes.contains { name.hasPrefix($0) }
    }
}

/// The params of one GA4 event as they are written: the mapped ones first, then the event's other
/// scalar properties, at most 25 in all (GA4's limit), names checked, string values cut to 100.
struct GA4Params {
    var params = JSONOutput(capacity: 256)
    var count = 0
    var names: [String] = []
    /// Property names the mapping used, not copied again as params.
    var consumed: [String] = ["products"]
    var trimmed: [String] = []

    /// A mapped param (nil or null values are left out).
    mutating func fixed(_ name: String, _ value: JSON?, consumes source: String? = nil) {
        if let source { consumed.append(source) }
        guard let value, !value.isNull, !names.contains(name) else { return }
        write(name, value)
    }

    /// `items`: already checked by the mapping.
    mutating func items(_ items: [JSONObject]) {
        names.append("items")
        if count > 0 { params.byte(UInt8(ascii: ",")) }
        count += 1
        params.raw("\"items\":[")
        for (n, item) in items.enumerated() {
            if n > 0 { params.byte(UInt8(ascii: ",")) }
            params.value(.object(item))
        }
        params.byte(UInt8(ascii: "]"))
    }

    /// The event's other properties, scalars only.
    mutating func rest(_ properties: JSONObject, messageId: String) {
        var over = 0
        var leftOut: [String] = []
        for (key, value) in properties where !consumed.contains(key) && !names.contains(key) {
            switch value {
            case .string, .number, .bool: break
            default:
                leftOut.append(key)
                continue
            }
            guard GA4Mapping.isParamName(key) else { leftOut.append(key); continue }
            guard count < GA4Mapping.maxParams else { over += 1; continue }
            write(key, value)
        }
        if !leftOut.isEmpty {
            trimmed.append("properties left out (GA4 takes params of scalar values named [A-Za-z0-9_] from a letter, ≤ 40): \(leftOut.prefix(5).joined(separator: ", "))\(leftOut.count > 5 ? " and \(leftOut.count - 5) more" : "")")
        }
        if over > 0 { trimmed.append("\(over) properties left out: GA4 takes at most \(GA4Mapping.maxParams) params per event") }
    }

    private mutating func write(_ name: String, _ value: JSON) {
        guard count < GA4Mapping.maxParams else {
            trimmed.append("param \(name) left out: GA4 takes at most \(GA4Mapping.maxParams) params per event")
            return
        }
        switch value {
        case .object, .array:
            trimmed.append("param \(name) left out: GA4 takes no objects or arrays as param values")
            return
        default: break
        }
        names.append(name)
        if count > 0 { params.byte(UInt8(ascii: ",")) }
        count += 1
        params.string(name)
        params.byte(UInt8(ascii: ":"))
        if case .string(let text) = value, text.utf8.count > GA4Mapping.maxParamValueLength, text.count > GA4Mapping.maxParamValueLength {
            params.string(String(text.prefix(GA4Mapping.maxParamValueLength)))
            trimmed.append("param \(name) cut to \(GA4Mapping.maxParamValueLength) characters")
        } else {
            params.value(value)
        }
    }
}
