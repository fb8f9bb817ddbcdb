// PostHog: Segment's "PostHog" destination as a device-mode integration written in Swift with the
// integration kit. Every Segment call becomes a PostHog capture event (see PostHogMapping) sent
// to `{postHogInstance or apiHost}/batch/` (see PostHogDelivery). docs/vendors/posthog.md has the
// settings, the mapping table and the limits.
//
// Delivery is per call for now: each hook returns only once PostHog acknowledged the event (or
// refused it for good), so an event the hook answered OK for is at PostHog and nothing sits in
// memory. The batching sender is ready for the ABI's batch hook and finish-later.

import AnalyticsIntegration
import Foundation

public final class PostHog: Integration, EventHooks, ResetHook, SettingsHook {
    public static let key = "PostHog"
    public static let version = "1.0.0"

    private let host: IntegrationHost
    private let delivery: PostHogDelivery
    /// The current user's group memberships (`$groups`: group type → key), from group calls.
    private var groups: JSONObject = [:]

    public init(settings: JSONObject, host: IntegrationHost) throws {
        let configuration = try PostHogConfiguration(settings: settings)
        self.host = host
        delivery = PostHogDelivery(configuration: configuration,
                                   transport: PostHogDelivery.urlSessionTransport(timeout: configuration.timeoutSeconds),
                                   wait: { seconds in Thread.sleep(forTimeInterval: seconds) })
        host.debug("PostHog: sending to \(configuration.batchURL.absoluteString)")
    }

    public func track(_ event: TrackEvent) throws { try send(event.raw) }
    public func identify(_ event: IdentifyEvent) throws { try send(event.raw) }
    public func screen(_ event: ScreenEvent) throws { try send(event.raw) }
    public func alias(_ event: AliasEvent) throws { try send(event.raw) }

    public func group(_ event: GroupEvent) throws {
        try send(event.raw)
        groups[delivery.configuration.groupType] = .string(event.groupId)
    }

    public func reset() throws { groups = [:] }

    public func update(settings: JSONObject, type: UpdateType) throws {
        do {
            delivery.configuration = try PostHogConfiguration(settings: settings)
        } catch {
            host.warn("PostHog: new settings refused, keeping the previous ones: \(error)")
            throw error
        }
    }

    private func send(_ event: Event) throws {
        let capture: JSONObject
        do {
            capture = try PostHogMapping.capture(event, groupType: delivery.configuration.groupType, groups: groups)
        } catch {
            throw IntegrationError.permanent(error.reason)
        }
        switch delivery.deliver([capture])[0] {
        case .delivered: return
        case .refused(let reason): throw IntegrationError.permanent(reason)
        case .retryLater(let reason): throw IntegrationError.retryable(reason)
        }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(PostHog.self, hostABI, err, errCapacity) }
