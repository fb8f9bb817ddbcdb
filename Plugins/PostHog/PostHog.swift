// PostHog: Segment's "PostHog" destination as a device-mode integration written in Swift with the
// integration kit. Every Segment call becomes a PostHog capture event (see PostHogMapping) sent
// to `{postHogInstance or apiHost}/batch/` (see PostHogDelivery). docs/vendors/posthog.md has the
// settings, the mapping table and the limits.
//
// With a host that offers finish-later and its HTTP requests (ABI 1.3), events are batched across
// calls and each call is answered when PostHog acknowledged the request that carried its event
// (PostHogUploads, on the kit's UploadQueue): the library needs no HTTP client of its own, and
// in process mode no network grant. With an older host each call sends its own request
// (PostHogDelivery) and returns when PostHog answered.

import AnalyticsIntegration
import Foundation

public final class PostHog: Integration, EventLaterHooks, SettingsHook, FlushHook, DurableEvents, @unchecked Sendable {
    // @unchecked: hooks run one at a time (the host's rule); `uploads` guards its own state.
    public static let key = "PostHog"
    public static let version = "1.2.0"

    private let host: IntegrationHost
    private let delivery: PostHogDelivery
    /// Batches through the host's HTTP client; nil with a host that has none.
    private let uploads: PostHogUploads?

    public init(settings: JSONObject, host: IntegrationHost) throws {
        let configuration = try PostHogConfiguration(settings: settings)
        self.host = host
        uploads = host.http.map { PostHogUploads(http: $0, host: host, configuration: configuration) }
        // Its own HTTP client only for a host without one to lend (the client starts threads).
        var transport: PostHogDelivery.Transport = { _, _, _ in .failed("not used: requests go through the host") }
        if uploads == nil { transport = PostHogDelivery.urlSessionTransport(timeout: configuration.timeoutSeconds) }
        delivery = PostHogDelivery(configuration: configuration, transport: transport,
                                   wait: { seconds in Thread.sleep(forTimeInterval: seconds) })
        host.debug("PostHog: sending to \(configuration.batchURL.absoluteString)\(uploads == nil ? " with its own HTTP client" : " through the host")")
    }

    public func track(_ event: TrackEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func identify(_ event: IdentifyEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func screen(_ event: ScreenEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func alias(_ event: AliasEvent, completion: Completion) throws { try send(event.raw, completion) }

    /// Group memberships travel with each event's own `context.groupId` (`$groups`): nothing
    /// of one event is kept for another (a server's stream interleaves many users).
    public func group(_ event: GroupEvent, completion: Completion) throws { try send(event.raw, completion) }

    /// Uploads what is held; the host's flush then waits for PostHog's answers.
    public func flush() throws { uploads?.flush() }

    public func update(settings: JSONObject, type: UpdateType) throws {
        do {
            let configuration = try PostHogConfiguration(settings: settings)
            delivery.configuration = configuration
            uploads?.configure(configuration)
        } catch {
            host.warn("PostHog: new settings refused, keeping the previous ones: \(error)")
            throw error
        }
    }

    private func send(_ event: Event, _ completion: Completion) throws {
        let capture: PostHogCapture
        do {
            capture = try PostHogMapping.capture(event, options: delivery.configuration.mapping)
        } catch {
            throw IntegrationError.permanent(error.reason)
        }
        if let uploads {
            try uploads.hold(capture, completion)
            return
        }
        switch delivery.deliver([capture])[0] {
        case .delivered: completion.succeed()
        case .refused(let reason): throw IntegrationError.permanent(reason)
        case .retryLater(let reason): throw IntegrationError.retryable(reason)
        }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(PostHog.self, hostABI, err, errCapacity) }
