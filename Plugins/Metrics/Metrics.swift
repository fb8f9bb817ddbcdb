// Metrics: counts what reaches this destination and writes a JSON summary on every flush; an
// example of a Swift integration that uses the host's services (log, ids, sending events).
//
// Settings (the object under `integrations["Metrics"]`):
//   {
//     "path": "/var/lib/app/metrics.json",   // required: the summary file, replaced atomically
//     "summaryEvent": "Metrics Summary"        // optional: also send a track event with this name
//                                               // and the counts as properties back into the
//                                               // pipeline on flush (it is not counted itself),
//                                               // up to the flush before STOPPING
//   }
//
// Summary file:
//   {"integration": "Metrics", "version": "1.0.0", "userId": …, "anonymousId": …, "total": 12,
//    "types": {"track": 9, "screen": 3}, "events": {"Order Completed": 4, …},
//    "screens": {"Home": 3}, "resets": 0, "flushes": 2, "writtenAt": "2026-…Z"}
// Counts are cumulative for the life of the instance. A file that cannot be written fails the
// flush (permanent: the path is wrong or not writable), with the system's reason.

import AnalyticsIntegration
import Foundation

/// The integration: counts by call type, track event name and screen name.
public final class Metrics: Integration, EventHooks, ResetHook, FlushHook, SettingsHook, LifecycleHook {
    public static let key = "Metrics"
    public static let version = "1.0.0"

    private let host: IntegrationHost
    private var path: String
    private var summaryEvent: String?
    private var counts = MetricsCounts()
    /// The host announced STOPPING: it flushed us just before, so that summary event was the last
    /// one every destination could still receive; later flushes only write the file.
    private var stopped = false

    public init(settings: JSONObject, host: IntegrationHost) throws {
        self.host = host
        (path, summaryEvent) = try Self.parse(settings)
    }

    public func track(_ event: TrackEvent) throws {
        if let summaryEvent, event.event == summaryEvent { return }
        counts.count(type: "track")
        counts.events[event.event, default: 0] += 1
    }

    public func identify(_ event: IdentifyEvent) throws { counts.count(type: "identify") }
    public func group(_ event: GroupEvent) throws { counts.count(type: "group") }
    public func alias(_ event: AliasEvent) throws { counts.count(type: "alias") }

    public func screen(_ event: ScreenEvent) throws {
        counts.count(type: event.raw.type.rawValue)  // "screen" or "page"
        counts.screens[event.name ?? "(unnamed)", default: 0] += 1
    }

    public func reset() throws { counts.resets += 1 }

    public func stopping() throws { stopped = true }

    public func update(settings: JSONObject, type: UpdateType) throws {
        (path, summaryEvent) = try Self.parse(settings)
    }

    public func flush() throws {
        counts.flushes += 1
        var summary = counts.json
        summary["userId"] = host.userId.map(JSON.string) ?? .null
        summary["anonymousId"] = host.anonymousId.map(JSON.string) ?? .null
        summary["writtenAt"] = .string(ISOTimestamp.now())
        let header: JSONObject = ["integration": .string(Self.key), "version": .string(Self.version)]
        let document = header.merging(summary)
        try Data(document.serializedBytes()).write(to: URL(fileURLWithPath: path), options: .atomic)
        host.debug("Metrics: wrote \(counts.total) counted events to \(path)")

        if let summaryEvent, !stopped {
            var event: JSONObject = ["type": "track", "event": .string(summaryEvent), "properties": .object(counts.json)]
            if let userId = host.userId { event["userId"] = .string(userId) }
            if let anonymousId = host.anonymousId { event["anonymousId"] = .string(anonymousId) }
            try host.send(event)
        }
    }

    private static func parse(_ settings: JSONObject) throws(IntegrationError) -> (String, String?) {
        guard let path = settings["path"]?.stringValue, !path.isEmpty else {
            throw .permanent("Metrics needs a \"path\" setting (the summary file)")
        }
        switch settings["summaryEvent"] {
        case nil, .null?: return (path, nil)
        case .string(let name)? where !name.isEmpty: return (path, name)
        case let other?: throw .permanent("Metrics setting \"summaryEvent\" must be a non-empty string, not \(other)")
        }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(Metrics.self, hostABI, err, errCapacity) }
