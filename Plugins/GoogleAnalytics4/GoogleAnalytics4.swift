// Google Analytics 4: Segment's "Google Analytics 4" destination as a Swift integration library,
// sending through the Measurement Protocol. GA4Mapping says how each call maps; docs/vendors/ga4.md
// has the settings, the mapping table and the limits.
//
// The Measurement Protocol answers 2xx even for events it drops, so this library checks GA4's
// rules itself (names, reserved names, parameter counts and lengths) and refuses, with a reason,
// what GA4 would silently drop. With a host that offers finish-later and its HTTP requests (ABI
// 1.3) events are batched across calls (GA4Uploads, on the kit's UploadQueue) and each call is
// answered when GA4 answered the request that carried it; with an older host each call is sent on
// its own and answered when GA4 answered.

import AnalyticsIntegration
import Foundation

public final class GoogleAnalytics4: Integration, EventLaterHooks, ResetHook, SettingsHook, FlushHook, DurableEvents, @unchecked Sendable {
    // @unchecked: hooks run one at a time (the host's rule); `uploads` guards its own state.
    public static let key = "Google Analytics 4"
    public static let version = "1.1.0"

    struct Configuration: Equatable {
        var url: URL
        var appStream: Bool
        var timeoutSeconds: Double

        init(settings: JSONObject) throws(IntegrationError) {
            let measurement = (settings["measurementId"] ?? settings["measurementID"])?.stringValue ?? ""
            let firebase = settings["firebaseAppId"]?.stringValue ?? ""
            guard let secret = settings["apiSecret"]?.stringValue, !secret.isEmpty else {
                throw .permanent("Google Analytics 4: settings need a non-empty \"apiSecret\" (the Measurement Protocol API secret)")
            }
            guard measurement.isEmpty != firebase.isEmpty else {
                throw .permanent("Google Analytics 4: settings need exactly one of \"measurementId\" (web stream) or \"firebaseAppId\" (app stream)")
            }
            var base = settings["apiHost"]?.stringValue ?? "https://www.google-analytics.com"
            while base.hasSuffix("/") { base.removeLast() }
            var components = URLComponents(string: base + "/mp/collect")
            components?.queryItems = [URLQueryItem(name: measurement.isEmpty ? "firebase_app_id" : "measurement_id", value: measurement.isEmpty ? firebase : measurement),
                                      URLQueryItem(name: "api_secret", value: secret)]
            guard let url = components?.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw .permanent("Google Analytics 4: \"\(base)\" is not an http(s) base URL")
            }
            self.url = url
            appStream = measurement.isEmpty
            timeoutSeconds = settings["timeoutSeconds"]?.doubleValue ?? 10
        }
    }

    private let host: IntegrationHost
    private var configuration: Configuration
    /// Its own HTTP client, only for a host without one to lend (the client starts threads).
    private lazy var client = HTTPClient()
    /// Batches through the host's HTTP client; nil with a host that has none.
    private let uploads: GA4Uploads?
    /// The user's traits from identify, sent as user_properties with every later event.
    private var userProperties: JSONObject = [:]

    public init(settings: JSONObject, host: IntegrationHost) throws {
        let configuration = try Configuration(settings: settings)
        self.configuration = configuration
        self.host = host
        uploads = host.http.map { GA4Uploads(http: $0, host: host, url: configuration.url, timeout: configuration.timeoutSeconds) }
    }

    public func track(_ event: TrackEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func screen(_ event: ScreenEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func group(_ event: GroupEvent, completion: Completion) throws { try send(event.raw, completion) }
    /// GA4 has no alias: a documented no-op.
    public func alias(_ event: AliasEvent, completion: Completion) throws { completion.succeed() }
    /// Identify sends nothing by itself (a Measurement Protocol request needs an event): its
    /// traits become the user_properties of the user's next events.
    public func identify(_ event: IdentifyEvent, completion: Completion) throws {
        userProperties.merge(GA4Mapping.userProperties(event.traits))
        completion.succeed()
    }
    public func reset() throws { userProperties = [:] }

    /// Sends what is held; the host's flush then waits for GA4's answers.
    public func flush() throws { uploads?.flush() }

    public func update(settings: JSONObject, type: UpdateType) throws {
        configuration = try Configuration(settings: settings)
        uploads?.configure(url: configuration.url, timeout: configuration.timeoutSeconds)
    }

    /// The request body for one call.
    static func body(_ event: Event, ga4Event: JSONObject, userProperties: JSONObject, appStream: Bool) throws(GA4Mapping.Refused) -> JSONObject {
        guard let anonymous = event.anonymousId ?? event.userId, !anonymous.isEmpty else {
            throw GA4Mapping.Refused(reason: "GA4: the event has no anonymousId for client_id")
        }
        var body: JSONObject = [:]
        if appStream {
            // app_instance_id is 32 hex digits: a UUID anonymousId without its dashes.
            let hex = anonymous.replacingOccurrences(of: "-", with: "").lowercased()
            guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else {
                throw GA4Mapping.Refused(reason: "GA4: anonymousId \"\(anonymous)\" is no UUID, so it cannot be an app_instance_id (32 hex digits)")
            }
            body["app_instance_id"] = .string(hex)
        } else {
            body["client_id"] = .string(anonymous)
        }
        if let user = event.userId, !user.isEmpty { body["user_id"] = .string(user) }
        if let micros = GA4Mapping.micros(event.timestamp) { body["timestamp_micros"] = .number(JSONNumber(micros)) }
        if !userProperties.isEmpty { body["user_properties"] = .object(userProperties) }
        body["events"] = [.object(ga4Event)]
        return body
    }

    private func send(_ event: Event, _ completion: Completion) throws {
        let body: JSONObject
        do {
            guard let ga4Event = try GA4Mapping.event(event) else { completion.succeed(); return }
            body = try Self.body(event, ga4Event: ga4Event, userProperties: userProperties, appStream: configuration.appStream)
        } catch {
            throw IntegrationError.permanent(error.reason)
        }
        if let uploads {
            uploads.hold(body, completion)
            return
        }
        try post(body)
        completion.succeed()
    }

    /// One call's request through AnalyticsCore's HTTP client (a host older than ABI 1.3).
    private func post(_ body: JSONObject) throws {
        let request = HTTPRequest(method: "POST", url: configuration.url, headers: [("Content-Type", "application/json")],
                                  body: body.serializedBytes(), timeout: configuration.timeoutSeconds)
        switch client.send(request) {
        case .success(let response):
            if (200..<300).contains(response.status) { return }
            let text = "Google Analytics 4: POST answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))"
            if response.status == 429 || response.status >= 500 { throw IntegrationError.retryable(text) }
            throw IntegrationError.permanent(text)
        case .failure(let error):
            throw IntegrationError.retryable("Google Analytics 4: POST failed: \(error)")
        }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(GoogleAnalytics4.self, hostABI, err, errCapacity) }
