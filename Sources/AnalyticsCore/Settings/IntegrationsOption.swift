/// The per-call `integrations` option (docs/settings-and-filters.md): which destinations receive one event.
package enum IntegrationsOption {
    /// A bool for the key decides; an object for the key means enabled (it carries per-destination
    /// options); otherwise `All` (or `all`) as a bool decides; otherwise enabled.
    /// Segment.io is the exception: only `"Segment.io": false` keeps an event from Segment, since
    /// the server applies the rest of the option to cloud-mode destinations.
    package static func isEnabled(_ key: String, in options: JSONObject) -> Bool {
        if options.isEmpty { return true }
        if key == "Segment.io" { return options[key]?.boolValue ?? true }
        switch options[key] {
        case .bool(let b)?: return b
        case .object?: return true
        default: break
        }
        if case .bool(let b)? = options["All"] { return b }
        if case .bool(let b)? = options["all"] { return b }
        return true
    }
}
