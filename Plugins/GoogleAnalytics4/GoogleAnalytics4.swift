// Google Analytics 4: Segment's "Google Analytics 4 Cloud" destination as a Swift integration
// library, sending through the Measurement Protocol. GA4Mapping says how each call maps (as
// Segment's destination maps it by default); docs/vendors/ga4.md has the settings, the table of
// Segment's behaviour beside ours, and the limits.
//
// The Measurement Protocol answers 2xx even for events it drops, so this library checks GA4's
// rules itself (names, reserved names, currencies, required fields, the 72-hour window) and
// refuses, with a reason naming the messageId, what GA4 would silently drop; what is over a GA4
// limit is cut as GA4 would and reported. With a host that offers finish-later and its HTTP
// requests (ABI 1.3) a client's events are gathered across calls (GA4Uploads, on the kit's
// UploadQueue) and each call is answered when GA4 answered the request that carried it; with an
// older host each call is sent on its own and answered when GA4 answered.

import AnalyticsIntegration
import Foundation

public final class GoogleAnalytics4: Integration, EventLaterHooks, SettingsHook, FlushHook, DurableEvents, @unchecked Sendable {
    // @unchecked: hooks run one at a time (the host's rule); `uploads` guards its own state.
    public static let key = "Google Analytics 4"
    public static let version = "1.2.0"

    struct Configuration: Equatable {
        var url: URL
        var appStream: Bool
        var timeoutSeconds: Double
        var maxWaitSeconds: Double
        var mapping: GA4Mapping.Options

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
            guard timeoutSeconds > 0, timeoutSeconds <= 300 else {
                throw .permanent("Google Analytics 4: \"timeoutSeconds\" must be a number in (0, 300]")
            }
            maxWaitSeconds = settings["maxWaitSeconds"]?.doubleValue ?? 5
            // Held calls count against the host's hook timeout (10 s by default): well below it.
            guard maxWaitSeconds > 0, maxWaitSeconds <= 5 else {
                throw .permanent("Google Analytics 4: \"maxWaitSeconds\" must be a number in (0, 5] (held calls must be answered within the host's hook timeout)")
            }
            mapping = GA4Mapping.Options()
            if let value = settings["engagementTimeMsec"] {
                guard let ms = value.intValue, ms > 0 else {
                    throw .permanent("Google Analytics 4: \"engagementTimeMsec\" must be a positive integer (GA4 counts no user without engagement time)")
                }
                mapping.engagementTimeMsec = ms
            }
            mapping.lowercaseEventNames = settings["lowercaseEventNames"]?.boolValue ?? false
            if let value = settings["userProperties"] {
                guard let map = value.objectValue else {
                    throw .permanent("Google Analytics 4: \"userProperties\" must be an object of trait name → user property name")
                }
                for (trait, property) in map {
                    guard let name = property.stringValue, name.utf8.count <= GA4Mapping.maxUserPropertyNameLength,
                          GA4Mapping.isParamName(name) else {
                        throw .permanent("Google Analytics 4: \"userProperties\": \(property) (for trait \"\(trait)\") is not a GA4 user property name (≤ 24 of [A-Za-z0-9_], from a letter)")
                    }
                    mapping.userProperties.append((trait, name))
                }
            }
        }
    }

    private let host: IntegrationHost
    private var configuration: Configuration
    private var mapping: GA4Mapping
    /// Its own HTTP client, only for a host without one to lend (the client starts threads).
    private lazy var client = HTTPClient()
    /// Batches through the host's HTTP client; nil with a host that has none.
    private let uploads: GA4Uploads?

    public init(settings: JSONObject, host: IntegrationHost) throws {
        let configuration = try Configuration(settings: settings)
        self.configuration = configuration
        self.host = host
        mapping = GA4Mapping(options: configuration.mapping)
        uploads = host.http.map { GA4Uploads(http: $0, host: host, url: configuration.url, timeout: configuration.timeoutSeconds,
                                              maxWait: configuration.maxWaitSeconds) }
    }

    public func track(_ event: TrackEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func screen(_ event: ScreenEvent, completion: Completion) throws { try send(event.raw, completion) }
    public func group(_ event: GroupEvent, completion: Completion) throws { try send(event.raw, completion) }
    /// GA4 has no alias: a documented no-op.
    public func alias(_ event: AliasEvent, completion: Completion) throws { completion.succeed() }
    /// GA4 has no identify (a Measurement Protocol request needs an event), and Segment's GA4
    /// destination sends nothing for one: a documented no-op. Traits reach GA4 only as the
    /// `userProperties` the settings name, from each event's own `context.traits`.
    public func identify(_ event: IdentifyEvent, completion: Completion) throws { completion.succeed() }

    /// Sends what is held; the host's flush then waits for GA4's answers.
    public func flush() throws { uploads?.flush() }

    public func update(settings: JSONObject, type: UpdateType) throws {
        configuration = try Configuration(settings: settings)
        mapping = GA4Mapping(options: configuration.mapping)
        uploads?.configure(url: configuration.url, timeout: configuration.timeoutSeconds)
    }

    private func send(_ event: Event, _ completion: Completion) throws {
        let mapped: GA4Mapping.GA4Event
        do {
            guard let event = try mapping.map(event, appStream: configuration.appStream, now: Date().timeIntervalSince1970) else {
                completion.succeed()
                return
            }
            mapped = event
        } catch {
            throw IntegrationError.permanent(error.reason)
        }
        if !mapped.trimmed.isEmpty {
            host.warn("Google Analytics 4: event \(event.messageId ?? "without messageId") sent cut to GA4's limits: \(mapped.trimmed.joined(separator: "; "))")
        }
        if let uploads {
            uploads.hold(mapped, completion)
            return
        }
        try post(GA4Requests.body([.init(userFields: mapped.userFields, event: mapped.event, micros: mapped.micros)]))
        completion.succeed()
    }

    /// One call's request through AnalyticsCore's HTTP client (a host older than ABI 1.3).
    private func post(_ body: [UInt8]) throws {
        let request = HTTPRequest(method: "POST", url: configuration.url, headers: [("Content-Type", "application/json")],
                                  body: body, timeout: configuration.timeoutSeconds)
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
