/// Makes a destination from its settings, as analytics-ios's integration factories do. The client
/// asks each factory whose key is in the settings' `integrations` map, at start and whenever a
/// refresh enables it; a refresh that removes the key destroys the destination.
///
/// Loaded integration libraries are factories too: one mechanism for code and for `.so` files.
public protocol IntegrationFactory: Sendable {
    var key: String { get }
    /// A new destination configured with `settings` (the key's object in `integrations`).
    func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin
}
