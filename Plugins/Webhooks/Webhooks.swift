// Webhooks: Segment's "Webhooks" destination as a device-mode integration written in Swift.
//
// Each event is POSTed, as its JSON text, to every configured URL with `Content-Type:
// application/json`, the configured headers and, when a shared secret is set, an `X-Signature`
// header: the hex HMAC-SHA1 of the exact body bytes keyed by the secret (Segment's scheme).
//
// Settings (the object under `integrations["Webhooks"]`, the shape Segment's settings use):
//   {
//     "hooks": [                                  // Segment's UI offers up to five
//       {"hook": "https://example.com/a",
//        "headers": [{"key": "Authorization", "value": "Bearer …"}]},
//       {"hook": "https://example.com/b"}
//     ],
//     "globalHook": "https://example.com/legacy",  // Segment's older single-URL field; used as one
//                                                  // more URL unless a hook already has that URL
//     "sharedSecret": "…",                         // optional: adds X-Signature
//     "timeoutSeconds": 10                         // this host's extension: per request, default 10
//   }
// Entries with an empty URL or an empty header key are ignored (Segment's UI stores such blanks).
// Configured headers override the defaults (Content-Type, User-Agent) of the same name.
//
// Outcome per event: 2xx from a URL is success; statuses follow the Segment retry classes (§4
// of the reference: 4xx is permanent except 408/410/429/460, 5xx is retryable except 501/505);
// network errors and timeouts are retryable. With several URLs every one is tried; the call
// fails retryable if any URL failed retryably (else permanent if any failed permanently), and a
// retry of the same message skips the URLs that already accepted it or refused it for good.
// Unlike Segment's cloud mode (where one success is enough), every URL gets every event.
// Requests go through the host's HTTP client (WebhookClient.swift), so in process mode the
// library needs no network grant.

import AnalyticsIntegration
import Foundation

/// The integration: one instance per configured "Webhooks" destination.
public final class Webhooks: Integration, EventHooks, SettingsHook {
    public static let key = "Webhooks"
    public static let version = "1.0.0"

    private var configuration: WebhooksConfiguration
    private let host: IntegrationHost
    private let http: HostHTTP
    private var client: WebhookClient
    /// The message whose last delivery partly failed, and the URLs already done with it.
    private var pending: (messageId: String, done: Set<Int>)?

    public init(settings: JSONObject, host: IntegrationHost) throws {
        configuration = try WebhooksConfiguration(settings: settings)
        guard let http = host.http else {
            throw IntegrationError.permanent("Webhooks: this host offers no HTTP requests (ABI 1.3 AH_EXT_HTTP_REQUESTS); it posts through them")
        }
        self.http = http
        client = WebhookClient(http: http, timeout: configuration.timeoutSeconds)
        self.host = host
        host.debug("Webhooks: posting to \(configuration.targets.map(\.url.absoluteString).joined(separator: ", "))")
    }

    public func track(_ event: TrackEvent) throws { try post(event.raw) }
    public func identify(_ event: IdentifyEvent) throws { try post(event.raw) }
    public func screen(_ event: ScreenEvent) throws { try post(event.raw) }
    public func group(_ event: GroupEvent) throws { try post(event.raw) }
    public func alias(_ event: AliasEvent) throws { try post(event.raw) }

    public func update(settings: JSONObject, type: UpdateType) throws {
        do {
            configuration = try WebhooksConfiguration(settings: settings)
            if client.timeout != configuration.timeoutSeconds { client = WebhookClient(http: http, timeout: configuration.timeoutSeconds) }
            pending = nil
        } catch {
            host.warn("Webhooks: new settings refused, keeping the previous ones: \(error)")
            throw error
        }
    }

    private func post(_ event: Event) throws {
        let body = event.serializedBytes
        var headers = configuration.commonHeaders
        if let secret = configuration.sharedSecret {
            headers.append((name: "X-Signature", value: HMACSHA1.hex(key: secret, message: body)))
        }
        var done: Set<Int> = []
        if let pending, let id = event.messageId, pending.messageId == id { done = pending.done }

        var retryable: [String] = []
        var permanent: [String] = []
        for (index, target) in configuration.targets.enumerated() where !done.contains(index) {
            let url = target.url.absoluteString
            switch client.post(target.url, headers: headers + target.headers, body: body) {
            case .response(let status):
                switch RetryPolicy.standard.classify(status: status) {
                case .success:
                    done.insert(index)
                case .retry, .rateLimited:
                    retryable.append("POST \(url) answered \(status)")
                case .drop:
                    done.insert(index)
                    permanent.append("POST \(url) answered \(status)")
                }
            case .failed(let reason):
                retryable.append("POST \(url) failed: \(reason)")
            }
        }
        let failures = (retryable + permanent).joined(separator: "; ")
        if !retryable.isEmpty {
            pending = event.messageId.map { ($0, done) }
            throw IntegrationError.retryable(failures)
        }
        pending = nil
        if !permanent.isEmpty { throw IntegrationError.permanent(failures) }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(Webhooks.self, hostABI, err, errCapacity) }
