/// Makes a destination from its settings, as analytics-ios's integration factories do. The client
/// asks each factory whose key is in the settings' `integrations` map, at start and whenever a
/// refresh enables it; a refresh that removes the key destroys the destination.
///
/// Loaded integration libraries are factories too: one mechanism for code and for `.so` files.
public protocol IntegrationFactory: Sendable {
    var key: String { get }
    /// A new destination configured with `settings` (the key's object in `integrations`).
    func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin
    /// The settings to create with, or nil when the settings do not ask for this integration.
    /// Default: the key's object in `integrations`, when present.
    func creationSettings(from settings: Settings) -> JSONObject?
    /// What the client adds to its timeline. Default: the destination `create` makes.
    func makePlugin(settings: JSONObject, analytics: Analytics) throws -> Plugin
}

extension IntegrationFactory {
    public func creationSettings(from settings: Settings) -> JSONObject? { settings.integrationSettings(forKey: key) }
    public func makePlugin(settings: JSONObject, analytics: Analytics) throws -> Plugin {
        try create(settings: settings, analytics: analytics)
    }
}
