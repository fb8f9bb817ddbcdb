import Foundation

// analytics-swift's ways of reading a destination's settings: decoded into a `Decodable` struct
// of the plugin's own, and the `hasIntegrationSettings` checks.
extension Settings {
    /// A destination's settings decoded into `T` (analytics-swift's call); nil when the key is
    /// absent or the settings do not decode as `T`.
    public func integrationSettings<T: Decodable>(forKey key: String) -> T? {
        guard let mine: JSONObject = integrationSettings(forKey: key) else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(mine.serializedBytes()))
    }

    /// The settings of `plugin`'s key decoded into `T`.
    public func integrationSettings<T: Decodable>(forPlugin plugin: DestinationPlugin) -> T? {
        integrationSettings(forKey: plugin.key)
    }

    /// Whether the settings name this key (the destination receives events).
    public func hasIntegrationSettings(key: String) -> Bool { hasIntegration(key) }

    /// Whether the settings name `plugin`'s key.
    public func hasIntegrationSettings(forPlugin plugin: DestinationPlugin) -> Bool { hasIntegration(plugin.key) }
}
