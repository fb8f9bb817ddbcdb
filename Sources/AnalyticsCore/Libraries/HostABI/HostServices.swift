import Dispatch

/// What the host offers integration libraries, as Swift closures (the C table that forwards to
/// them is `HostTable`). Every closure may be called from any thread, including from
/// inside a hook and from threads the library started, so each must be thread-safe and quick.
package struct HostServices: Sendable {
    /// A log line from the library.
    package var log: @Sendable (NativeLogLevel, String) -> Void
    /// A new event from the library (complete JSON object text), to run through the pipeline.
    /// Must only enqueue: it is often called from inside a hook.
    package var sendEvent: @Sendable ([UInt8]) -> NativeHookResult
    /// The current userId, if any.
    package var userId: @Sendable () -> String?
    /// The current anonymousId.
    package var anonymousId: @Sendable () -> String?
    /// The client's signals, when the application enabled them (`AH_EXT_SIGNALS`).
    package var signals: @Sendable () -> Signals? = { nil }
    /// In `analytics-plugin-runner`: the host, where the library's signals go (`signals` is then
    /// the runner's own hub for the library's subscribers).
    var signalsRelay: (any SignalsRelay)?
    /// The library's key, for names in reports.
    package var key = ""
    /// Whether a log line at this level would be kept (ABI 1.3 `log_enabled`).
    package var logEnabled: @Sendable (NativeLogLevel) -> Bool = { _ in true }

    // ABI 1.2 capability tables (`ah_host.get_extension`); nil: the id answers NULL.
    /// `AH_EXT_TIMELINE`: where the instance's timeline plugins go.
    package var timeline: (any NativeTimelineService)?
    /// `AH_EXT_CLIENT`: the rest of the client.
    package var client: HostServices.Client?
    /// `AH_EXT_HTTP`: the host's HTTP client.
    package var http: HostServices.HTTP?
    /// `AH_EXT_CLIENTS`: second clients for other write keys.
    package var clients: NativeClientsService?

    package init(
        log: @escaping @Sendable (NativeLogLevel, String) -> Void,
        sendEvent: @escaping @Sendable ([UInt8]) -> NativeHookResult,
        userId: @escaping @Sendable () -> String?,
        anonymousId: @escaping @Sendable () -> String?,
        timeline: (any NativeTimelineService)? = nil,
        client: HostServices.Client? = nil,
        http: HostServices.HTTP? = nil
    ) {
        self.log = log
        self.sendEvent = sendEvent
        self.userId = userId
        self.anonymousId = anonymousId
        self.timeline = timeline
        self.client = client
        self.http = http
    }
}

/// Levels of `ah_host.log`; unknown values from a library read as `.info`.
package enum NativeLogLevel: Int32, Sendable, Comparable {
    case debug = 0, info = 1, warn = 2, error = 3

    package static func < (a: NativeLogLevel, b: NativeLogLevel) -> Bool { a.rawValue < b.rawValue }
}

extension HostServices {
    /// Services backed by a client: logs go to its log handler (prefixed with the integration's
    /// key), events sent back run through its whole pipeline later, on a host queue
    /// (`Analytics.enqueueSentBack`), so no callback is re-entered, but are answered now: OK when
    /// they will be delivered like any other, retryable (queued nowhere) when a queue is full or
    /// the host is stopping; ids are the client's (absent in server mode, which has no user).
    /// The client is held weakly: after it is gone, ids read as absent and events are refused.
    package static func forwarding(to analytics: Analytics, key: String) -> HostServices {
        let weak = WeakAnalytics(analytics)
        // A library's log lines are its output on the host's: cut at 4 KiB, at most a rate of
        // them (the same bound as a runner's printed lines).
        let rate = LibraryOutput.rate(for: "log " + key)
        analytics.libraryLogRates.withLock { $0[key] = rate }
        var services = HostServices(
            log: { level, whole in
                let (print, before) = rate.admit()
                @Sendable func say(_ count: Int) {
                    if count > 0 { weak.value?.log(.warning, "\(key): \(LibraryOutput.suppressedText(count, what: "log lines"))") }
                }
                say(before)
                // An error is a problem the summary reports (exit 3) even when the rate limit keeps
                // its line off the terminal.
                if level == .error { weak.value?.libraryProblems.logged(key: key, LibraryOutput.cut(whole)) }
                guard print else {
                    // Said within a second, whether or not the library logs again.
                    if rate.arm() { DispatchQueue.global().asyncAfter(deadline: .now() + 1) { rate.saySuppressed(say) } }
                    return
                }
                let text = LibraryOutput.cut(whole)
                let mapped: LogLevel
                switch level {
                case .debug: mapped = .debug
                case .info: mapped = .info
                case .warn: mapped = .warning
                case .error: mapped = .error
                }
                guard let analytics = weak.value else { return }
                analytics.log(mapped, "\(key): \(text)")
            },
            sendEvent: { bytes in
                guard let analytics = weak.value else { return .retryable("the client is gone") }
                return sendBack(bytes, to: analytics, key: key)
            },
            userId: { weak.value?.userId },
            anonymousId: { weak.value?.storedAnonymousId },
            timeline: NativePluginRegistry(ownerKey: key, analytics: analytics),
            client: .forwarding(to: analytics, key: key),
            http: .shared)
        services.clients = .forwarding(to: analytics, key: key)
        // Any origin in-process (the library is the host), with the same caps as process mode.
        let inProcess = LibraryHTTPPolicy(unrestricted: true, maxResponseBytes: analytics.configuration.isolation.maxHTTPResponseBytes)
        services.http?.send = { request, answer in LibraryHTTPClient.shared.send(request, policy: inProcess, answer: answer) }
        services.signals = { weak.value?.signals }
        services.key = key
        services.logEnabled = NativeLogLevel.threshold(of: analytics.configuration)
        return services
    }

    /// An event a library sent (JSON object text) into `analytics`'s pipeline, answered now (see
    /// ``forwarding(to:key:)``); `key` names the sender in reports.
    static func sendBack(_ bytes: [UInt8], to analytics: Analytics, key: String) -> NativeHookResult {
        do {
            guard case .object(let payload) = try JSON(parsing: bytes) else {
                return .permanent("an event must be a JSON object")
            }
            switch try analytics.enqueueSentBack(payload: payload) {
            case .accepted: return .ok
            case .saturated(let destination): return .retryable("the queue of \(destination) is full")
            case .stopping: return .retryable("the host is stopping")
            case .unstorable(let reason, let permanent):
                analytics.report(.plugin(name: key, message: "event sent back was refused: \(reason)"))
                return permanent ? .permanent(reason) : .retryable(reason)
            }
        } catch {
            analytics.report(.plugin(name: key, message: "event sent back was refused: \(error)"))
            return .permanent("\(error)")
        }
    }
}
