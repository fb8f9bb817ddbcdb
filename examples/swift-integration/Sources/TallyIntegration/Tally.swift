import AnalyticsIntegration

/// A destination that counts track calls and logs the count on every flush: the smallest useful
/// integration. It is created when the settings name its key: `"integrations": {"Tally": {}}`.
/// It adopts `TrackHook` and `FlushHook`, so those are the only calls it receives (and the hooks
/// `analytics-host plugins` lists for it); add `IdentifyHook` & co. for more.
public final class Tally: Integration, TrackHook, FlushHook {
    public static let key = "Tally"
    public static let version = "1.0.0"

    private let host: IntegrationHost
    private var tracks = 0

    public init(settings: JSONObject, host: IntegrationHost) throws {
        self.host = host
    }

    public func track(_ event: TrackEvent) throws {
        tracks += 1
    }

    public func flush() throws {
        host.info("\(tracks) track calls so far")
    }
}

/// The one exported symbol: the host finds the integration through it.
@_cdecl("analytics_host_plugin_v1")
public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? {
    IntegrationExport.entry(Tally.self, hostABI, err, errCapacity)
}
