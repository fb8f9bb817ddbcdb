import AnalyticsIntegration

/// Segment's e-commerce and lifecycle spec events as GA4's recommended events, with the fields
/// and checks of Segment's GA4 actions (their default mappings and validation):
///
/// - `purchase` and `refund` need `order_id` (→ `transaction_id`); their `value` is `total`.
/// - `currency` is checked against ISO 4217 (sent upper-case); `purchase` needs one; a `value`
///   without currency is refused (GA4 ignores it), and the events whose Segment action says so
///   need a currency at the event or the first item.
/// - Events with items need at least one, each with an `item_id` or `item_name`; at most 200
///   (GA4's limit) are sent, the rest reported.
struct GA4Recommended: Sendable {
    enum Items: Sendable {
        /// No items.
        case none
        /// The event's own properties as its one product (Product Added, …).
        case single
        /// `properties.products`.
        case multi
    }

    enum Currency: Sendable {
        /// Checked when present (and needed with a value, as for every event).
        case checked
        /// Needed when it has a value, and at the event or the first item in any case.
        case eventOrItem
        /// Needed always (purchase).
        case required
    }

    let name: String
    let items: Items
    let itemsRequired: Bool
    let currency: Currency?
    /// GA4 param ← Segment property.
    let fields: [(param: String, property: String)]
    /// Params that must be present (GA4 needs them), with the property they come from.
    let required: [(param: String, property: String)]

    static let events: [String: GA4Recommended] = [
        "Order Completed": .init(name: "purchase", items: .multi, itemsRequired: true, currency: .required,
                                 fields: [("transaction_id", "order_id"), ("value", "total"), ("affiliation", "affiliation"),
                                          ("coupon", "coupon"), ("shipping", "shipping"), ("tax", "tax")],
                                 required: [("transaction_id", "order_id")]),
        "Order Refunded": .init(name: "refund", items: .multi, itemsRequired: false, currency: .eventOrItem,
                                fields: [("transaction_id", "order_id"), ("value", "total"), ("affiliation", "affiliation"),
                                         ("coupon", "coupon"), ("shipping", "shipping"), ("tax", "tax")],
                                required: [("transaction_id", "order_id")]),
        "Product Added": .init(name: "add_to_cart", items: .single, itemsRequired: true, currency: .checked,
                               fields: [("value", "value")], required: []),
        "Product Removed": .init(name: "remove_from_cart", items: .single, itemsRequired: true, currency: .eventOrItem,
                                 fields: [("value", "value")], required: []),
        "Product Viewed": .init(name: "view_item", items: .single, itemsRequired: true, currency: .checked,
                                fields: [("value", "value")], required: []),
        "Product Clicked": .init(name: "select_item", items: .single, itemsRequired: true, currency: nil,
                                 fields: [("item_list_id", "list_id"), ("item_list_name", "list_name")], required: []),
        "Product List Viewed": .init(name: "view_item_list", items: .multi, itemsRequired: true, currency: nil,
                                     fields: [("item_list_id", "list_id"), ("item_list_name", "category")], required: []),
        "Product Added to Wishlist": .init(name: "add_to_wishlist", items: .single, itemsRequired: true, currency: .eventOrItem,
                                           fields: [("value", "value")], required: []),
        "Cart Viewed": .init(name: "view_cart", items: .multi, itemsRequired: true, currency: .eventOrItem,
                             fields: [("value", "value")], required: []),
        "Checkout Started": .init(name: "begin_checkout", items: .multi, itemsRequired: true, currency: .checked,
                                  fields: [("value", "value"), ("coupon", "coupon")], required: []),
        "Payment Info Entered": .init(name: "add_payment_info", items: .multi, itemsRequired: true, currency: .eventOrItem,
                                      fields: [("value", "value"), ("coupon", "coupon"), ("payment_type", "payment_method")], required: []),
        "Products Searched": .init(name: "search", items: .none, itemsRequired: false, currency: nil,
                                   fields: [("search_term", "query")], required: [("search_term", "query")]),
        "Promotion Viewed": .init(name: "view_promotion", items: .single, itemsRequired: false, currency: nil,
                                  fields: [("promotion_id", "promotion_id"), ("promotion_name", "name"), ("creative_name", "creative_name"),
                                           ("creative_slot", "creative"), ("location_id", "position")], required: []),
        "Promotion Clicked": .init(name: "select_promotion", items: .single, itemsRequired: false, currency: nil,
                                   fields: [("promotion_id", "promotion_id"), ("promotion_name", "name"), ("creative_name", "creative_name"),
                                            ("creative_slot", "creative")], required: []),
        "Signed Up": .init(name: "sign_up", items: .none, itemsRequired: false, currency: nil, fields: [("method", "type")], required: []),
        "Signed In": .init(name: "login", items: .none, itemsRequired: false, currency: nil, fields: [("method", "method")], required: []),
    ]

    /// Segment product fields → GA4 item fields (`products[]` entries, or a product event's
    /// own properties).
    static let itemFields: [(item: String, product: String)] = [
        ("item_id", "product_id"), ("item_id", "sku"), ("item_name", "name"), ("affiliation", "affiliation"),
        ("coupon", "coupon"), ("index", "position"), ("item_brand", "brand"), ("item_category", "category"),
        ("item_variant", "variant"), ("price", "price"), ("quantity", "quantity"), ("currency", "currency"),
    ]

    /// Writes this event's mapped params into `params`, or says why GA4 would not take it.
    func fill(_ params: inout GA4Params, _ properties: JSONObject, messageId id: String) throws(GA4Mapping.Refused) {
        for (param, property) in required where properties[property].map({ $0.isNull }) ?? true {
            throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)) needs properties.\(property) (GA4's \(param))")
        }
        // The event's currency.
        var currency: String?
        if let value = properties["currency"], !value.isNull {
            guard let text = value.stringValue, let code = GA4Currency.code(text) else {
                throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)): currency \(value.stringValue.map { "\"\($0)\"" } ?? "\(value)") is not an ISO 4217 code")
            }
            currency = code
        }
        // Items.
        var items: [JSONObject] = []
        switch self.items {
        case .none: break
        case .single: items = [Self.item(properties)]
        case .multi: items = (properties["products"]?.arrayValue ?? []).compactMap { $0.objectValue.map(Self.item) }
        }
        if self.items == .single, items.first.map({ $0["item_id"] == nil && $0["item_name"] == nil }) == true {
            items = []
        }
        if itemsRequired, items.isEmpty {
            let source = self.items == .multi ? "properties.products" : "a product_id or name"
            throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)) needs \(source): GA4 needs at least one item")
        }
        for (n, item) in items.enumerated() {
            if item["item_id"] == nil && item["item_name"] == nil {
                throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)): product \(n) has neither product_id nor name")
            }
            if let value = item["currency"] {
                guard let text = value.stringValue, let code = GA4Currency.code(text) else {
                    throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)): product \(n)'s currency \(value) is not an ISO 4217 code")
                }
                items[n]["currency"] = .string(code)
            }
        }
        let value = fields.first { $0.param == "value" }.flatMap { properties[$0.property] }.flatMap { $0.isNull ? nil : $0 }
        if let value, value.numberValue == nil {
            throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)): value \(value) is not a number")
        }
        if currency == nil {
            if self.currency == .required {
                throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)) needs properties.currency (an ISO 4217 code)")
            }
            if value != nil {
                throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)) has a value but no currency (GA4 ignores a value without one)")
            }
            if self.currency == .eventOrItem, items.first?["currency"] == nil {
                throw GA4Mapping.Refused(reason: "Google Analytics 4: event \(id) (\(name)) needs a currency, in properties or its first product")
            }
        }
        params.fixed("currency", currency.map(JSON.string), consumes: "currency")
        for (param, property) in fields { params.fixed(param, properties[property], consumes: property) }
        if self.items == .single {
            params.consumed += Self.itemFields.map(\.product)
        }
        if !items.isEmpty {
            if items.count > GA4Mapping.maxItems {
                params.trimmed.append("\(items.count - GA4Mapping.maxItems) items left out: GA4 takes at most \(GA4Mapping.maxItems) per event")
                items.removeLast(items.count - GA4Mapping.maxItems)
            }
            params.items(items)
        }
    }

    /// One GA4 item from a Segment product.
    static func item(_ product: JSONObject) -> JSONObject {
        var item: JSONObject = [:]
        for (to, from) in itemFields where item[to] == nil {
            if let value = product[from], !value.isNull { item[to] = value }
        }
        return item
    }
}

/// ISO 4217 currency codes (active ones, funds and the X-codes GA4's checks accept).
enum GA4Currency {
    static let codes: Set<String> = Set("""
        AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD \
        CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP \
        GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW \
        KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD \
        NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE \
        SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED \
        VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL
        """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))

    /// The code in upper case, or nil when `text` is none.
    static func code(_ text: String) -> String? {
        let upper = text.uppercased()
        return codes.contains(upper) ? upper : nil
    }
}
