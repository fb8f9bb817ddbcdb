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

/// A factory whose settings object has a declared schema (a loaded library's
/// `AH_EXT_SETTINGS_SCHEMA`, in-process or in process mode): the client checks the settings before
/// it makes the plugin. A wrong type or a missing required setting keeps it from being created
/// (reported with the key and the reason); an unknown key is logged as a warning.
package protocol DeclaresSettingsSchema: IntegrationFactory {
    var settingsSchema: SettingsSchema? { get }
}

extension DeclaresSettingsSchema {
    /// The problems of this factory's settings in `settings` (its `integrations` object).
    package func schemaProblems(in settings: Settings) -> [SettingsProblem] {
        guard let schema = settingsSchema else { return [] }
        let own = settings.integrations[key]?.objectValue ?? [:]
        return HostSettingsSchemas.destinationProblems(own, key: key, schema: schema, at: "integrations.\(key)", source: "settings")
    }
}
