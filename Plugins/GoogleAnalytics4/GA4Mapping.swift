import AnalyticsIntegration
import Foundation

/// Segment events as Measurement Protocol events, the way Segment's GA4 destination maps them:
/// Segment's e-commerce spec events become GA4's recommended events, other track names are made
/// valid GA4 names, and the rules GA4 enforces (silently, by dropping) are enforced here, loudly.
enum GA4Mapping {
    struct Refused: Error, Equatable { var reason: String }

    /// Segment e-commerce and lifecycle names → GA4 recommended event names.
    static let recommended: [String: String] = [
        "Order Completed": "purchase", "Order Refunded": "refund", "Product Added": "add_to_cart",
        "Product Removed": "remove_from_cart", "Product Viewed": "view_item", "Product Clicked": "select_item",
        "Product List Viewed": "view_item_list", "Cart Viewed": "view_cart", "Checkout Started": "begin_checkout",
        "Payment Info Entered": "add_payment_info", "Product Added to Wishlist": "add_to_wishlist",
        "Products Searched": "search", "Promotion Viewed": "view_promotion", "Promotion Clicked": "select_promotion",
        "Signed Up": "sign_up", "Signed In": "login",
    ]

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
    static let maxNameLength = 40
    static let maxParams = 25
    static let maxParamValueLength = 100
    static let maxUserPropertyNameLength = 24
    static let maxUserPropertyValueLength = 36

    /// A valid GA4 name from any text: characters other than letters, digits and `_` become `_`,
    /// cut to 40; refused when it does not start with a letter or is reserved.
    static func eventName(_ text: String) throws(Refused) -> String {
        if let known = recommended[text] { return known }
        var name = String(text.unicodeScalars.map { ($0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_")) ? Character($0) : "_" })
        if name.count > maxNameLength { name = String(name.prefix(maxNameLength)) }
        guard let first = name.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else {
            throw Refused(reason: "GA4: \"\(text)\" cannot be a GA4 event name (it must start with a letter)")
        }
        if reservedNames.contains(name) || reservedPrefixes.contains(where: { name.hasPrefix($0) }) {
            throw Refused(reason: "GA4: \"\(name)\" is a name the Measurement Protocol reserves")
        }
        return name
    }

    /// Event parameters: valid names, scalar values (strings cut to 100 characters), at most 25
    /// (GA4 keeps the first 25); `items` passes as an array of objects.
    static func params(_ properties: JSONObject, fixed: JSONObject = [:]) -> JSONObject {
        var out = fixed
        for (key, value) in properties where out.count < maxParams {
            guard let name = try? paramName(key), !out.contains(name) else { continue }
            switch value {
            case .string(let text): out[name] = .string(String(text.prefix(maxParamValueLength)))
            case .number, .bool: out[name] = value
            default: continue
            }
        }
        return out
    }

    static func paramName(_ key: String) throws(Refused) -> String {
        let name = String(key.unicodeScalars.map { ($0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_")) ? Character($0) : "_" }).prefix(maxNameLength)
        guard let first = name.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first),
              !reservedPrefixes.contains(where: { name.hasPrefix($0) }) else {
            throw Refused(reason: "GA4: \"\(key)\" cannot be a parameter name")
        }
        return String(name)
    }

    /// GA4 `items` from Segment `products` (or the single product of a product event).
    static func items(_ properties: JSONObject) -> JSON? {
        let products = properties["products"]?.arrayValue?.compactMap(\.objectValue) ?? (properties["product_id"] != nil || properties["sku"] != nil ? [properties] : [])
        guard !products.isEmpty else { return nil }
        return .array(products.map { product in
            var item: JSONObject = [:]
            for (from, to) in [("product_id", "item_id"), ("sku", "item_id"), ("name", "item_name"), ("brand", "item_brand"),
                               ("category", "item_category"), ("variant", "item_variant"), ("coupon", "coupon"),
                               ("price", "price"), ("quantity", "quantity"), ("position", "index")] {
                if item[to] == nil, let value = product[from], !value.isNull { item[to] = value }
            }
            return .object(item)
        })
    }

    /// The GA4 event for one Segment call, or nil when the call maps to none (identify, alias).
    static func event(_ event: Event) throws(Refused) -> JSONObject? {
        let properties = event.properties
        switch event.type {
        case .track:
            guard let raw = event.event, !raw.isEmpty else { throw Refused(reason: "GA4: the track event has no name") }
            let name = try eventName(raw)
            var fixed: JSONObject = [:]
            if let currency = properties["currency"] { fixed["currency"] = currency }
            if let value = properties["revenue"] ?? properties["total"] ?? properties["value"] ?? properties["price"], value.numberValue != nil { fixed["value"] = value }
            if let order = properties["order_id"] { fixed["transaction_id"] = order }
            if name == "search", let query = properties["query"] { fixed["search_term"] = query }
            if name == "purchase" || name == "refund", fixed["transaction_id"] == nil {
                throw Refused(reason: "GA4: \(raw) needs properties.order_id (GA4's transaction_id)")
            }
            if fixed["value"] != nil, fixed["currency"] == nil { fixed["currency"] = "USD" }
            var params = Self.params(properties, fixed: fixed)
            for key in ["revenue", "total", "order_id", "products", "query"] { _ = params.removeValue(forKey: key) }
            if let items = items(properties) { params["items"] = items }
            return ["name": .string(name), "params": .object(params)]
        case .page, .screen:
            var fixed: JSONObject = [:]
            let page = event.context["page"]?.objectValue ?? [:]
            if event.type == .page {
                if let url = properties["url"] ?? page["url"] { fixed["page_location"] = url }
                if let title = properties["title"] ?? page["title"] ?? event.name.map(JSON.string) { fixed["page_title"] = title }
                if let referrer = properties["referrer"] ?? page["referrer"] { fixed["page_referrer"] = referrer }
                return ["name": "page_view", "params": .object(params(properties, fixed: fixed))]
            }
            if let name = event.name { fixed["screen_name"] = .string(name) }
            return ["name": "screen_viewed", "params": .object(params(properties, fixed: fixed))]
        case .group:
            guard let group = event.groupId, !group.isEmpty else { throw Refused(reason: "GA4: the group call has no groupId") }
            return ["name": "join_group", "params": ["group_id": .string(group)]]
        case .identify, .alias:
            return nil
        }
    }

    /// `user_properties` ({name: {"value": v}}) from traits: valid names of up to 24 characters,
    /// scalar values (strings cut to 36).
    static func userProperties(_ traits: JSONObject) -> JSONObject {
        var out: JSONObject = [:]
        for (key, value) in traits {
            guard let name = try? paramName(key), name.count <= maxUserPropertyNameLength else { continue }
            switch value {
            case .string(let text): out[name] = ["value": .string(String(text.prefix(maxUserPropertyValueLength)))]
            case .number, .bool: out[name] = ["value": value]
            default: continue
            }
        }
        return out
    }

    /// Microseconds since 1970 of the event's ISO-8601 timestamp.
    static func micros(_ timestamp: String?) -> Int? {
        timestamp.flatMap(ISO8601Timestamp.microseconds)
    }
}
