import Foundation

// analytics-swift's builder style beside the properties:
//
//     let configuration = Configuration(writeKey: "KEY")
//         .flushAt(3)
//         .trackApplicationLifecycleEvents(false)
//
// `Configuration` is a value here (a struct, safe to share between threads), so each method
// returns a changed copy: chain the calls or assign the result (`config = config.flushAt(3)`);
// a bare `config.flushAt(3)` is a warning (unused result), never a silent no-op.

extension Configuration {
    private func with(_ change: (inout Configuration) -> Void) -> Configuration {
        var copy = self
        change(&copy)
        return copy
    }

    /// Name, version and build added to `context.app` (and used by the lifecycle events).
    public func application(_ value: ApplicationInfo?) -> Configuration { with { $0.application = value } }

    public func trackApplicationLifecycleEvents(_ enabled: Bool) -> Configuration {
        with { $0.trackApplicationLifecycleEvents = enabled }
    }

    public func flushAt(_ count: Int) -> Configuration { with { $0.flushAt = count } }

    public func flushInterval(_ interval: TimeInterval) -> Configuration { with { $0.flushInterval = interval } }

    public func defaultSettings(_ settings: Settings?) -> Configuration { with { $0.defaultSettings = settings } }

    public func autoAddSegmentDestination(_ value: Bool) -> Configuration { with { $0.autoAddSegmentDestination = value } }

    /// Host (and path) uploads go to, e.g. "api.segment.io/v1" (the settings' `apiHost` otherwise).
    public func apiHost(_ value: String) -> Configuration { with { $0.segment.apiHost = value } }

    /// Host settings are fetched from, e.g. "cdn-settings.segment.com".
    public func cdnHost(_ value: String) -> Configuration { with { $0.settingsLocation = .cdn(host: value) } }

    public func errorHandler(_ value: @escaping @Sendable (AnalyticsError) -> Void) -> Configuration {
        with { $0.errorHandler = value }
    }

    public func logHandler(_ value: @escaping @Sendable (LogLevel, String) -> Void) -> Configuration {
        with { $0.logHandler = value }
    }

    public func operatingMode(_ mode: OperatingMode) -> Configuration { with { $0.operatingMode = mode } }

    public func storageMode(_ mode: StorageMode) -> Configuration { with { $0.storageMode = mode } }

    // Builders for what analytics-host adds.

    public func storageDirectory(_ path: String) -> Configuration { with { $0.storageDirectory = path } }

    public func settingsLocation(_ location: SettingsLocation) -> Configuration { with { $0.settingsLocation = location } }

    public func pluginsDirectory(_ path: String?) -> Configuration { with { $0.pluginsDirectory = path } }

    /// Adds a plugin before the client starts (it then also sees the start-up events).
    public func add(plugin: Plugin) -> Configuration { with { $0.plugins.append(plugin) } }

    public func sourceMiddleware(_ middleware: [Middleware]) -> Configuration { with { $0.sourceMiddleware = middleware } }

    public func flushTimeout(_ seconds: Double) -> Configuration { with { $0.flushTimeout = seconds } }

    public func applicationEventsFromJobControl(_ on: Bool) -> Configuration {
        with { $0.applicationEventsFromJobControl = on }
    }
}
