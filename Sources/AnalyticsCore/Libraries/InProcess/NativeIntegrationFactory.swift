/// A loaded library as an integration factory: the client creates its destination when the
/// library's key appears in the settings' `integrations` map, with that key's settings object, and
/// destroys it when the key goes away, exactly as for factories written in Swift.
package struct NativeIntegrationFactory: DeclaresSettingsSchema {
    package let library: NativeLibrary
    package let retryPolicy: NativeRetryPolicy

    package init(library: NativeLibrary, retryPolicy: NativeRetryPolicy = NativeRetryPolicy()) {
        self.library = library
        self.retryPolicy = retryPolicy
    }

    package var key: String { library.key }
    package var settingsSchema: SettingsSchema? { library.info.settingsSchema }

    /// A failing `create` throws `PluginLoadError.createFailed` with the library's own text.
    package func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin {
        let instance = try library.makeInstance(settings: settings, services: .forwarding(to: analytics, key: key))
        return NativeDestination(integration: instance, retryPolicy: retryPolicy,
                                 durability: NativeDurability.resolve(settings: settings, library: library.info.durable))
    }

    /// A whole-settings library (ABI 1.2 role) exists unless `integrations[key]` is exactly false,
    /// and is created with the whole document; any other exists when `integrations` names it.
    package func creationSettings(from settings: Settings) -> JSONObject? {
        guard library.info.wantsWholeSettings else { return settings.integrationSettings(forKey: key) }
        return settings.integrations[key] == .bool(false) ? nil : settings.json
    }

    /// A destination, or for a library whose role is not a destination, a `NativeUtilityLibrary`.
    package func makePlugin(settings: JSONObject, analytics: Analytics) throws -> Plugin {
        if library.info.isDestination { return try create(settings: settings, analytics: analytics) }
        let instance = try library.makeInstance(settings: settings, services: .forwarding(to: analytics, key: key))
        return NativeUtilityLibrary(integration: instance, timeout: analytics.configuration.flushTimeout)
    }
}

extension PluginLoader.ScanResult {
    /// The loaded libraries as factories for `Configuration.integrationFactories`.
    package func factories(retryPolicy: NativeRetryPolicy = NativeRetryPolicy()) -> [IntegrationFactory] {
        libraries.map { NativeIntegrationFactory(library: $0, retryPolicy: retryPolicy) }
    }
}

extension PluginLoadError {
    /// The problem as the client's error handler receives it.
    package var analyticsError: AnalyticsError { .loader(description) }
}
