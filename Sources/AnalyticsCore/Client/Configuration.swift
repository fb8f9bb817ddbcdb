import Foundation

/// How a client is set up. Everything has a default except the write key.
public struct Configuration: Sendable {
    /// The source's write key (Basic-auth user for uploads, key of the settings URL).
    public var writeKey: String
    /// Where user state (and the event queue) live; survives restarts.
    public var storageDirectory: String
    /// Whose events this client sends (``IdentityMode``): the one user of this device (the
    /// default, as analytics-swift), or messages from many people, each with its own ids and
    /// context (`.server`, as Segment's server libraries; `analytics-host run`'s default).
    public var identity: IdentityMode = .device
    /// Upload when this many events are queued…
    public var flushAt: Int = 20
    /// …or this many seconds after the last upload.
    public var flushInterval: Double = 30
    /// Settings used until (or instead of) fetched ones; `Settings.fallback` when nil.
    public var defaultSettings: Settings?
    /// Where settings come from (Segment's CDN unless told otherwise).
    public var settingsLocation: SettingsLocation = .segmentCDN
    /// Fetch settings again this often (seconds); nil: only at start and on `refreshSettings()`.
    public var settingsRefreshInterval: Double?
    /// Receives every failure; by default they are written to standard error.
    public var errorHandler: (@Sendable (AnalyticsError) -> Void)?
    /// Receives informational messages (e.g. a settings key that no library provides).
    public var logHandler: (@Sendable (LogLevel, String) -> Void)?
    /// The least severe level `logHandler` keeps, when it filters (libraries ask, through ABI
    /// 1.3 `log_enabled`, so they skip formatting lines nobody reads). nil: every level is kept
    /// by a handler, and warnings and errors without one.
    public var logThreshold: LogLevel?
    /// Name, version and build of the application, added to each event's `context.app` (device mode).
    public var application: ApplicationInfo?
    /// Send "Application Installed" / "Updated" / "Opened" at start, as analytics-swift does on iOS
    /// (device mode only: a server has no application user to send them for).
    public var trackApplicationLifecycleEvents = true
    /// Source middleware, run on every call in order (fixed once the client exists).
    public var sourceMiddleware: [Middleware] = []
    /// Destination middleware by destination key (fixed once the client exists).
    public var destinationMiddleware: [String: [Middleware]] = [:]
    /// Plugins added before the client starts, so they also see the lifecycle events.
    public var plugins: [Plugin] = []
    /// Factories for destinations made from settings (built-in and loaded from libraries).
    public var integrationFactories: [IntegrationFactory] = []
    /// Integration libraries (`*.so`) to load at start; each becomes a factory for its key.
    public var pluginsDirectory: String?
    /// Options for integration libraries, by library key, read through `AH_EXT_CLIENT.options`
    /// (e.g. `["LivePlugins": ["fallbackBundle": "/path/bundle.js"]]`).
    public var pluginOptions: [String: JSONObject] = [:]
    /// Which loaded libraries run in a child process (`IsolationMode`), and its limits.
    public var isolation = IsolationConfiguration()
    /// `analytics-plugin-runner`, when it is not next to the running executable.
    public var pluginRunnerPath: String?
    /// Load libraries that group or others may write (normally refused: a plugin runs with our rights).
    public var allowInsecurePluginPermissions = false
    /// Random numbers in [0, 1) for sampling without a key (destination filters); injectable for tests.
    public var randomSource: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// Events each destination may hold before the oldest are dropped.
    public var destinationQueueCapacity = 10_000
    /// What a full destination queue does: drop the oldest (default) or make the caller wait.
    public var destinationOverflow: OverflowPolicy = .dropOldest
    /// Longest wait of `flush()` and `shutdown()` for destinations to drain, in seconds.
    public var flushTimeout: Double = 10
    /// How long `shutdown()` (and removing a destination) waits for a destination other than
    /// Segment.io to drain, flush, hear STOPPING and be destroyed, in seconds. One still inside a
    /// call then (a hung library hook) is abandoned: its undelivered events are counted as
    /// abandoned and reported with the call and event, and it is never destroyed.
    public var hookTimeout: Double = 10
    /// How a loaded library's retryable failures are retried (attempts, backoff, the longest
    /// Retry-After it may ask for), in either isolation mode. In process mode it also bounds how
    /// long an item may stay in a runner that sends empty results frames (see ProcessDestination).
    package var libraryRetryPolicy = NativeRetryPolicy()
    /// How long a middleware that answers later (`next.later()`) may take to call `next`, in
    /// seconds; past it the event is dropped and reported. nil: `hookTimeout`.
    public var middlewareTimeout: Double? = nil
    /// Add the built-in Segment.io destination (uploads to the tracking API) when the settings
    /// name it. Off: only the destinations given here and loaded from libraries exist.
    public var autoAddSegmentDestination = true
    /// Disk cap of the Segment.io upload queue; past it the oldest events are dropped and reported.
    public var maxQueueBytes = 64 << 20
    /// Segment.io destination knobs that settings do not carry (host override, flush wait…).
    public var segment = SegmentDestinationOptions()

    /// Signals (breadcrumbs for Analytics Live's event generators); nil: off. See ``Signals``.
    public var signals: SignalsConfiguration?

    /// Where user state and the upload queue live: `storageDirectory` (`.disk`), another
    /// directory, or memory (`.memory(n)`, for tests and short-lived tools). See ``StorageMode``.
    public var storageMode: StorageMode = .disk
    /// Whether `flush(completion:)` blocks (``OperatingMode``), as in analytics-swift.
    public var operatingMode: OperatingMode = .asynchronous
    /// Turn job control into application events: SIGTSTP (Ctrl-Z) sends willResignActive and
    /// didEnterBackground, flushes, then stops the process; SIGCONT sends willEnterForeground and
    /// didBecomeActive. Off by default: it installs a SIGTSTP handler. See ``ApplicationEvent``.
    public var applicationEventsFromJobControl = false

    public init(writeKey: String, storageDirectory: String? = nil) {
        self.writeKey = writeKey
        self.storageDirectory = storageDirectory ?? Configuration.defaultStorageDirectory(writeKey: writeKey)
    }

    /// `$XDG_DATA_HOME/analytics-host/<writeKey>`, else `~/.local/share/analytics-host/<writeKey>`.
    public static func defaultStorageDirectory(writeKey: String) -> String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((env["HOME"] ?? NSTemporaryDirectory()) + "/.local/share")
        let safeKey = writeKey.isEmpty ? "default" : writeKey.replacingOccurrences(of: "/", with: "_")
        return base + "/analytics-host/" + safeKey
    }
}

/// The application that embeds the client.
public struct ApplicationInfo: Sendable, Equatable {
    public var name: String
    public var version: String
    public var build: String
    public init(name: String, version: String, build: String) {
        self.name = name
        self.version = version
        self.build = build
    }
}

public enum LogLevel: String, Sendable, Comparable {
    case debug, info, warning, error
    public static func < (a: LogLevel, b: LogLevel) -> Bool {
        let order: [LogLevel] = [.debug, .info, .warning, .error]
        return order.firstIndex(of: a)! < order.firstIndex(of: b)!
    }
}
