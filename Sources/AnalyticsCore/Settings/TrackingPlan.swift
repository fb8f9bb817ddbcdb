/// The tracking plan of the settings (`plan.track`), as device-mode destinations honour it:
/// Segment.io always receives the event (the server applies the plan there); for other
/// destinations a planned event with `enabled: false` is blocked, one with `enabled: true` follows
/// its `integrations` map (the `integrations` option rule, `IntegrationsOption`), and an unplanned event follows `__default.enabled`.
struct TrackingPlan: Sendable {
    private var events: [String: JSONObject] = [:]
    private var defaultEnabled = true

    init(settings: Settings) {
        guard let track = settings.plan?["track"]?.objectValue else { return }
        for (name, value) in track {
            guard let rule = value.objectValue else { continue }
            if name == "__default" { defaultEnabled = rule["enabled"]?.boolValue ?? true } else { events[name] = rule }
        }
    }

    var isEmpty: Bool { events.isEmpty && defaultEnabled }

    func allows(event name: String, destination key: String) -> Bool {
        if key == "Segment.io" { return true }
        guard let rule = events[name] else { return defaultEnabled }
        guard rule["enabled"]?.boolValue ?? true else { return false }
        return IntegrationsOption.isEnabled(key, in: rule["integrations"]?.objectValue ?? [:])
    }
}
