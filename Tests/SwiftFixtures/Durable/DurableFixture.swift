// A test fixture: the smallest Swift integration that asks for the host's durable queue
// (DurableEvents, ABI 1.3 AH_EXT_DURABLE) with a disk cap of 1 MiB. Its track hook accepts
// every event.

import AnalyticsIntegration

public final class DurableFixture: Integration, TrackHook, DurableEvents {
    public static let key = "DurableFixture"
    public static let version = "1.0.0"
    public static let durableMaxDiskBytes: UInt64? = 1 << 20

    public init(settings: JSONObject, host: IntegrationHost) throws {}

    public func track(_ event: TrackEvent) throws {}
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(DurableFixture.self, hostABI, err, errCapacity) }
