import AnalyticsIntegration
import Foundation

/// Turns a Segment event into one PostHog capture event (the objects of `/batch/`'s "batch"):
///
/// | Segment | PostHog |
/// |---|---|
/// | track `event`, `properties` | `event`, `properties` (revenue, currency, products kept as given) |
/// | identify `traits` | `$identify`, `properties.$set`, `$anon_distinct_id` |
/// | screen `name` | `$screen`, `properties.$screen_name` |
/// | page `name`, `properties.url` | `$pageview`, `properties.$current_url`, `$title` |
/// | group `groupId`, `traits` | `$groupidentify` with `$group_type`, `$group_key`, `$group_set` |
/// | alias `previousId` → `userId` | `$create_alias`, `distinct_id` previousId, `properties.alias` |
/// | `userId` ?? `anonymousId` | `distinct_id` |
/// | `timestamp` | `timestamp` (ISO-8601, as given) |
/// | `messageId` | `uuid` (itself when it is a UUID, else a UUID derived from it, stable) |
/// | `context` | `$os`, `$app_version`, `$device_model`, `$ip`, `$lib`, … (see `contextProperties`) |
enum PostHogMapping {
    /// `$lib` and `$lib_version` on every event.
    static let library = "analytics-host"

    struct Refused: Error, Equatable { var reason: String }

    /// The capture event for `event`, or the reason PostHog would refuse it. `groups` are the
    /// group memberships to attach (`properties.$groups`).
    static func capture(_ event: Event, groupType: String, groups: JSONObject) throws(Refused) -> JSONObject {
        let userId = nonEmpty(event.userId)
        let anonymousId = nonEmpty(event.anonymousId)
        guard var distinctId = userId ?? anonymousId else {
            throw Refused(reason: "PostHog: the \(event.type.rawValue) event \(event.messageId ?? "") has neither userId nor anonymousId (PostHog needs a distinct_id)")
        }
        var properties = contextProperties(event.context)
        let name: String
        switch event.type {
        case .track:
            guard let eventName = nonEmpty(event.event) else {
                throw Refused(reason: "PostHog: the track event \(event.messageId ?? "") has no event name")
            }
            name = eventName
            properties.merge(event.properties)
        case .identify:
            name = "$identify"
            properties.merge(event.properties)
            properties["$set"] = .object(event.traits)
            if userId != nil, let anonymousId { properties["$anon_distinct_id"] = .string(anonymousId) }
        case .screen:
            name = "$screen"
            properties.merge(event.properties)
            if let screen = nonEmpty(event.name) { properties["$screen_name"] = .string(screen) }
        case .page:
            name = "$pageview"
            properties.merge(event.properties)
            let page = event.context["page"]?.objectValue ?? [:]
            if let url = event.properties["url"]?.stringValue ?? page["url"]?.stringValue { properties["$current_url"] = .string(url) }
            if let title = event.properties["title"]?.stringValue ?? page["title"]?.stringValue ?? nonEmpty(event.name) {
                properties["$title"] = .string(title)
            }
        case .group:
            guard let groupId = nonEmpty(event.groupId) else {
                throw Refused(reason: "PostHog: the group event \(event.messageId ?? "") has no groupId")
            }
            name = "$groupidentify"
            properties["$group_type"] = .string(groupType)
            properties["$group_key"] = .string(groupId)
            properties["$group_set"] = .object(event.traits)
        case .alias:
            guard let newId = userId, let previousId = nonEmpty(event.previousId) else {
                throw Refused(reason: "PostHog: the alias event \(event.messageId ?? "") needs both userId and previousId")
            }
            name = "$create_alias"
            distinctId = previousId
            properties["alias"] = .string(newId)
        }
        if !groups.isEmpty, event.type != .group { properties["$groups"] = .object(groups) }
        properties["$lib"] = .string(library)
        properties["$lib_version"] = .string(PostHog.version)

        var capture: JSONObject = ["event": .string(name), "distinct_id": .string(distinctId), "properties": .object(properties)]
        if let timestamp = nonEmpty(event.timestamp) { capture["timestamp"] = .string(timestamp) }
        if let messageId = nonEmpty(event.messageId) { capture["uuid"] = .string(uuid(for: messageId)) }
        return capture
    }

    /// Segment's context fields under PostHog's property names (what posthog-ios and
    /// posthog-android send for the same facts).
    static func contextProperties(_ context: JSONObject) -> JSONObject {
        var out: JSONObject = [:]
        func copy(_ object: String, _ field: String, to name: String) {
            if let value = context[object]?.objectValue?[field], !value.isNull { out[name] = value }
        }
        copy("app", "name", to: "$app_name")
        copy("app", "version", to: "$app_version")
        copy("app", "build", to: "$app_build")
        copy("app", "namespace", to: "$app_namespace")
        copy("os", "name", to: "$os")
        copy("os", "version", to: "$os_version")
        copy("device", "manufacturer", to: "$device_manufacturer")
        copy("device", "model", to: "$device_model")
        copy("device", "type", to: "$device_type")
        copy("device", "id", to: "$device_id")
        copy("screen", "width", to: "$screen_width")
        copy("screen", "height", to: "$screen_height")
        copy("network", "carrier", to: "$network_carrier")
        copy("page", "referrer", to: "$referrer")
        copy("page", "path", to: "$pathname")
        copy("library", "name", to: "segment_library")
        copy("library", "version", to: "segment_library_version")
        for (field, name) in [("ip", "$ip"), ("locale", "$locale"), ("timezone", "$timezone"), ("userAgent", "$raw_user_agent")] {
            if let value = context[field], !value.isNull { out[name] = value }
        }
        return out
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
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
