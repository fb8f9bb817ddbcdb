/// The settings JSON in the CDN shape (docs/settings-and-filters.md). Kept whole so that keys the host does not
/// know pass through to plugins untouched.
public struct Settings: Sendable, Equatable {
    public var json: JSONObject

    public init(_ json: JSONObject = [:]) { self.json = json }

    /// Parses settings text; the error names the problem, its line and its column.
    public init(parsing text: String) throws(JSONParseError) {
        let value = try JSON(parsing: text)
        guard case .object(let o) = value else { throw JSONParseError(message: "settings must be a JSON object", offset: 0) }
        self.json = o
    }

    /// `{ "<Destination Key>": { settings } }`: which destinations exist for this source.
    public var integrations: JSONObject { json["integrations"]?.objectValue ?? [:] }

    /// A destination's own settings, or nil when the key is absent (the destination is not created).
    public func integrationSettings(forKey key: String) -> JSONObject? {
        guard let v = integrations[key] else { return nil }
        return v.objectValue ?? [:]
    }

    public func hasIntegration(_ key: String) -> Bool { integrations[key] != nil }

    /// The tracking plan (`plan.track`, `plan.identify`, `plan.group`).
    public var plan: JSONObject? { json["plan"]?.objectValue }

    /// `middlewareSettings` (destination filters live in its `routingRules`).
    public var middlewareSettings: JSONObject? { json["middlewareSettings"]?.objectValue }

    /// What a source with no settings at all still needs: uploading to Segment.
    public static func fallback(writeKey: String, apiHost: String = "api.segment.io/v1") -> Settings {
        Settings(["integrations": ["Segment.io": ["apiKey": .string(writeKey), "apiHost": .string(apiHost)]]])
    }
}
