import Foundation

extension Analytics {
    /// The application was opened with a URL (a deep link, a `myapp://` handler, a file to open):
    /// later events carry it as `context.referrer.url`, `OpeningURLs` plugins and
    /// `ApplicationLifecycle` plugins and libraries hear it (`openURL`), and "Deep Link Opened" is
    /// tracked with `options` plus `url`, as in analytics-swift.
    public func openURL(_ url: URL, options: [String: Any] = [:]) {
        guard enabled else { return }
        let text = url.absoluteString
        compatibility.referrer.withLock { $0 = text }
        timeline.add(ReferrerPlugin(state: compatibility), unlessPresent: true)
        for case let listener as OpeningURLs in allPlugins { listener.openURL(url, options: options) }
        var properties = converted(options, "properties", call: "openURL") ?? [:]
        deliver(.openURL(url: text, options: properties))
        properties["url"] = .string(text)
        track("Deep Link Opened", properties: properties)
    }

    public func openURL<T: Encodable>(_ url: URL, options: T? = nil) {
        let object = encoded(options, "properties", call: "openURL") ?? [:]
        openURL(url, options: Dictionary(uniqueKeysWithValues: object.map { ($0.key, $0.value as Any) }))
    }
}

/// Adds `context.referrer.url` (the last `openURL`) to every event, like analytics-swift.
final class ReferrerPlugin: Plugin {
    let type = PluginType.enrichment
    let state: ClientCompatibilityState
    init(state: ClientCompatibilityState) { self.state = state }

    func execute(_ event: Event) -> Event? {
        guard let url = state.referrer.withLock({ $0 }) else { return event }
        var e = event
        var context = e.context
        context["referrer"] = ["url": .string(url)]
        e.context = context
        return e
    }
}

extension SegmentDestination {
    /// Removes every event from the upload queue (`purgeStorage()`); returns how many left it.
    func purge() -> Int {
        guard let queue else { return 0 }
        var purged = 0
        while queue.hasPendingEvents {
            guard let batch = try? queue.peekBatch(maxEvents: 10_000, maxBytes: 16 << 20), batch.count > 0,
                  let removed = try? queue.acknowledge(batch) else { break }
            purged += removed
            counters.removed(removed)
        }
        return purged
    }
}
