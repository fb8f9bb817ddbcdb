import AnalyticsIntegration
import Foundation

/// One capture event of `/batch/`'s "batch", encoded, with what a reason needs to name it.
struct PostHogCapture: Sendable {
    let bytes: [UInt8]
    /// PostHog's event name (`$identify`, `Order Completed`, …).
    let event: String
    /// "Order Completed (messageId m-1)", for reasons.
    let name: String
    /// Whose person (or group) a person or group event changes (nil for other events).
    var person: String? = nil
}

/// Turns a Segment event into one PostHog capture event, as Segment's PostHog destination does
/// by default where it maps the call (docs/vendors/posthog.md has the table beside Segment's):
///
/// | Segment | PostHog |
/// |---|---|
/// | track `event`, `properties` | `event`, `properties` (revenue, currency, products kept as given) |
/// | identify `traits` | `$identify`, `properties.$set`, `$anon_distinct_id` |
/// | screen `name` | `$screen`, `properties.$screen_name` |
/// | page `context.page.url`, `name` | `$pageview`, `properties.$current_url`, `$title` |
/// | group `groupId`, `traits` | `$groupidentify` with `$group_type`, `$group_key`, `$group_set` |
/// | alias `previousId` → `userId` | `$create_alias`, `distinct_id` previousId, `properties.alias` |
/// | `userId` ?? `anonymousId` | `distinct_id` |
/// | `timestamp` | `timestamp` (ISO-8601, as given) |
/// | `messageId` | `uuid` (itself when it is a UUID, else a UUID derived from it, stable) |
/// | `context.ip`, else none | `$ip`; without one `$geoip_disable` (PostHog would locate the sender) |
/// | `context.groupId` | `$groups` {groupType: groupId} |
/// | `context` | `$os`, `$app_version`, `$device_model`, `$lib`, … (see `contextFields`) |
///
/// The capture is written straight into its JSON bytes: the event's properties are copied value
/// by value, never merged into a new object (a merge is quadratic in the number of properties).
enum PostHogMapping {
    /// `$lib` and `$lib_version` on every event.
    static let library = "analytics-host"

    struct Refused: Error, Equatable { var reason: String }

    struct Options: Equatable, Sendable {
        /// The group type of a group call and of `context.groupId`.
        var groupType = "company"
        /// Segment's "Disable GeoIP Collection": no event is located, even with `context.ip`.
        var geoipDisable = false
    }

    /// Segment context field → PostHog property (what posthog-ios and posthog-android send for
    /// the same facts).
    static let contextFields: [(object: String, field: String, name: String)] = [
        ("app", "name", "$app_name"), ("app", "version", "$app_version"), ("app", "build", "$app_build"),
        ("app", "namespace", "$app_namespace"), ("os", "name", "$os"), ("os", "version", "$os_version"),
        ("device", "manufacturer", "$device_manufacturer"), ("device", "model", "$device_model"),
        ("device", "type", "$device_type"), ("device", "id", "$device_id"), ("screen", "width", "$screen_width"),
        ("screen", "height", "$screen_height"), ("network", "carrier", "$network_carrier"),
        ("page", "referrer", "$referrer"), ("page", "path", "$pathname"),
        ("library", "name", "segment_library"), ("library", "version", "segment_library_version"),
    ]
    static let topContextFields: [(field: String, name: String)] = [
        ("ip", "$ip"), ("locale", "$locale"), ("timezone", "$timezone"), ("userAgent", "$raw_user_agent"),
    ]

    /// The capture event for `event`, or the reason PostHog would refuse it.
    static func capture(_ event: Event, options: Options) throws(Refused) -> PostHogCapture {
        let id = event.messageId.flatMap { $0.isEmpty ? nil : $0 }
        let label = id.map { "messageId \($0)" } ?? "without messageId"
        let userId = nonEmpty(event.userId)
        let anonymousId = nonEmpty(event.anonymousId)
        guard var distinctId = userId ?? anonymousId else {
            throw Refused(reason: "PostHog: the \(event.type.rawValue) event \(label) has neither userId nor anonymousId (PostHog needs a distinct_id)")
        }
        let context = event.context
        // What this mapping sets itself wins over a property of the same name.
        var own: [(String, JSON)] = []
        let name: String
        var copied: JSONObject = [:]
        switch event.type {
        case .track:
            guard let eventName = nonEmpty(event.event) else {
                throw Refused(reason: "PostHog: the track event \(label) has no event name")
            }
            name = eventName
            copied = event.properties
        case .identify:
            name = "$identify"
            copied = event.properties
            own.append(("$set", .object(event.traits)))
            if userId != nil, let anonymousId { own.append(("$anon_distinct_id", .string(anonymousId))) }
        case .screen:
            name = "$screen"
            copied = event.properties
            if let screen = nonEmpty(event.name) { own.append(("$screen_name", .string(screen))) }
        case .page:
            name = "$pageview"
            copied = event.properties
            let page = context["page"]?.objectValue
            if let url = page?["url"]?.stringValue ?? event.properties["url"]?.stringValue { own.append(("$current_url", .string(url))) }
            if let title = page?["title"]?.stringValue ?? event.properties["title"]?.stringValue ?? nonEmpty(event.name) {
                own.append(("$title", .string(title)))
            }
        case .group:
            guard let groupId = nonEmpty(event.groupId) else {
                throw Refused(reason: "PostHog: the group event \(label) has no groupId")
            }
            name = "$groupidentify"
            own.append(("$group_type", .string(options.groupType)))
            own.append(("$group_key", .string(groupId)))
            own.append(("$group_set", .object(event.traits)))
        case .alias:
            guard let newId = userId, let previousId = nonEmpty(event.previousId) else {
                throw Refused(reason: "PostHog: the alias event \(label) needs both userId and previousId")
            }
            name = "$create_alias"
            distinctId = previousId
            own.append(("alias", .string(newId)))
        }
        if event.type != .group, let group = context["groupId"]?.stringValue, !group.isEmpty {
            own.append(("$groups", [options.groupType: .string(group)]))
        }
        // No context.ip: PostHog would locate the event by the sender's address (this host's).
        let ip = context["ip"].flatMap { $0.isNull ? nil : $0 }
        if options.geoipDisable || ip == nil { own.append(("$geoip_disable", true)) }
        own.append(("$lib", .string(library)))
        own.append(("$lib_version", .string(PostHog.version)))

        var out = JSONOutput(capacity: 256)
        out.raw("{\"event\":")
        out.string(name)
        out.raw(",\"distinct_id\":")
        out.string(distinctId)
        out.raw(",\"properties\":{")
        var first = true
        func field(_ key: String, _ value: JSON) {
            out.key(key, first: first)
            first = false
            out.value(value)
        }
        func isOwn(_ key: String) -> Bool { own.contains { $0.0 == key } }
        // The event's own properties, then the context's facts it does not carry itself.
        for (key, value) in copied where !isOwn(key) { field(key, value) }
        for (object, member, property) in contextFields {
            guard let value = context[object]?.objectValue?[member], !value.isNull, copied[property] == nil, !isOwn(property) else { continue }
            field(property, value)
        }
        for (member, property) in topContextFields {
            guard let value = context[member], !value.isNull, copied[property] == nil, !isOwn(property) else { continue }
            field(property, value)
        }
        for (key, value) in own { field(key, value) }
        out.byte(UInt8(ascii: "}"))
        if let timestamp = nonEmpty(event.timestamp) {
            out.raw(",\"timestamp\":")
            out.string(timestamp)
        }
        if let id {
            out.raw(",\"uuid\":")
            out.string(uuid(for: id))
        }
        out.byte(UInt8(ascii: "}"))
        var person: String?
        switch event.type {
        case .identify: person = userId ?? distinctId
        case .alias: person = userId
        case .group: person = "$group/\(options.groupType)/\(event.groupId ?? "")"
        default: person = nil
        }
        return PostHogCapture(bytes: out.bytes, event: name, name: "\(name) (\(label))", person: person)
    }

    /// PostHog's `uuid` must be a UUID. A messageId that is one is used as it is (lower-cased);
    /// any other (e.g. analytics.js's "ajs-…") becomes a UUID derived from its bytes, the same
    /// every time, so that a batch sent twice still carries the same ids.
    static func uuid(for messageId: String) -> String {
        if let parsed = UUID(uuidString: messageId) { return parsed.uuidString.lowercased() }
        // Two 64-bit FNV-1a hashes with different offsets: 128 bits, then the version (8: custom)
        // and variant bits of RFC 9562.
        var a: UInt64 = 0xcbf2_9ce4_8422_2325, b: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in messageId.utf8 {
            a = (a ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = (b ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            b = b ^ (b >> 29)
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: a >> (56 - 8 * UInt64(i))) }
        for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (56 - 8 * UInt64(i))) }
        bytes[6] = (bytes[6] & 0x0f) | 0x80
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
            text.append(JSONOutput.hexDigit(byte >> 4))
            text.append(JSONOutput.hexDigit(byte & 0xF))
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
