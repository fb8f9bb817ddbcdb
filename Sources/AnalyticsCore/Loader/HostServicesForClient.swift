extension HostServices {
    /// Services backed by a client: logs go to its log handler (prefixed with the integration's
    /// key), events sent back run through its whole pipeline later, on a host queue
    /// (`Analytics.enqueueSentBack`), so no callback is re-entered, but are answered now: OK when
    /// they will be delivered like any other, retryable (queued nowhere) when a queue is full or
    /// the host is stopping; ids are the client's.
    /// The client is held weakly: after it is gone, ids read as absent and events are refused.
    public static func forwarding(to analytics: Analytics, key: String) -> HostServices {
        let weak = WeakAnalytics(analytics)
        var services = HostServices(
            log: { level, text in
                let mapped: LogLevel
                switch level {
                case .debug: mapped = .debug
                case .info: mapped = .info
                case .warn: mapped = .warning
                case .error: mapped = .error
                }
                weak.value?.log(mapped, "\(key): \(text)")
            },
            sendEvent: { bytes in
                guard let analytics = weak.value else { return .retryable("the client is gone") }
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
            },
            userId: { weak.value?.userId },
            anonymousId: { weak.value?.anonymousId },
            timeline: NativePluginRegistry(ownerKey: key, analytics: analytics),
            client: .forwarding(to: analytics, key: key),
            http: .shared)
        services.signals = { weak.value?.signals }
        services.key = key
        services.logEnabled = NativeLogLevel.threshold(of: analytics.configuration)
        return services
    }
}
