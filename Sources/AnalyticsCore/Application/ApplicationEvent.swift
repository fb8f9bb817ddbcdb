import CAnalyticsABI
import Foundation

/// analytics-ios's application-state and notification callbacks, as one event type that every
/// plugin and integration library can hear (`ApplicationLifecycle`, and in C the
/// `analytics-host.application/1` table of include/analytics_plugin.h).
///
/// On Linux:
/// - `didFinishLaunching`: sent by the client itself when its start-up is over (end of `init`).
/// - `willTerminate`: sent by `shutdown()` before anything stops.
/// - `willResignActive`, `didEnterBackground` / `willEnterForeground`, `didBecomeActive`: SIGTSTP
///   and SIGCONT when `Configuration.applicationEventsFromJobControl` is on (a terminal's Ctrl-Z
///   and `fg`); otherwise the application's own calls (a desktop app losing focus, a service
///   told to pause).
/// - `registeredForRemoteNotifications`, `failedToRegisterForRemoteNotifications`,
///   `receivedRemoteNotification`: Linux has no platform push service, so only an application
///   that has its own push channel sends them (`analytics.application(...)`).
/// - `openURL`: `analytics.openURL(_:options:)`, which also tracks "Deep Link Opened".
/// analytics-ios's `handleActionWithIdentifier` and `continueUserActivity` have no Linux meaning
/// and no kind.
public enum ApplicationEvent: Sendable, Equatable {
    case didFinishLaunching(options: JSONObject)
    case didEnterBackground
    case willEnterForeground
    case willTerminate
    case willResignActive
    case didBecomeActive
    /// The device token as the push service gave it (hex text for APNs-style tokens).
    case registeredForRemoteNotifications(deviceToken: String)
    case failedToRegisterForRemoteNotifications(error: String)
    case receivedRemoteNotification(userInfo: JSONObject)
    case openURL(url: String, options: JSONObject)

    /// The AH_APP_* code the C table receives.
    public var kind: Int32 {
        switch self {
        case .didFinishLaunching: return Int32(AH_APP_DID_FINISH_LAUNCHING)
        case .didEnterBackground: return Int32(AH_APP_DID_ENTER_BACKGROUND)
        case .willEnterForeground: return Int32(AH_APP_WILL_ENTER_FOREGROUND)
        case .willTerminate: return Int32(AH_APP_WILL_TERMINATE)
        case .willResignActive: return Int32(AH_APP_WILL_RESIGN_ACTIVE)
        case .didBecomeActive: return Int32(AH_APP_DID_BECOME_ACTIVE)
        case .registeredForRemoteNotifications: return Int32(AH_APP_REGISTERED_FOR_REMOTE_NOTIFICATIONS)
        case .failedToRegisterForRemoteNotifications: return Int32(AH_APP_FAILED_TO_REGISTER_FOR_REMOTE_NOTIFICATIONS)
        case .receivedRemoteNotification: return Int32(AH_APP_RECEIVED_REMOTE_NOTIFICATION)
        case .openURL: return Int32(AH_APP_OPEN_URL)
        }
    }

    /// analytics-ios's name for it ("applicationDidEnterBackground", …).
    public var name: String {
        switch self {
        case .didFinishLaunching: return "applicationDidFinishLaunching"
        case .didEnterBackground: return "applicationDidEnterBackground"
        case .willEnterForeground: return "applicationWillEnterForeground"
        case .willTerminate: return "applicationWillTerminate"
        case .willResignActive: return "applicationWillResignActive"
        case .didBecomeActive: return "applicationDidBecomeActive"
        case .registeredForRemoteNotifications: return "registeredForRemoteNotifications"
        case .failedToRegisterForRemoteNotifications: return "failedToRegisterForRemoteNotifications"
        case .receivedRemoteNotification: return "receivedRemoteNotification"
        case .openURL: return "openURL"
        }
    }

    /// The JSON object the C hook receives: `{"name": …}` plus the kind's own fields
    /// (`options`, `deviceToken`, `error`, `userInfo`, `url`).
    public var json: JSONObject {
        var o: JSONObject = ["name": .string(name)]
        switch self {
        case .didFinishLaunching(let options): o["options"] = .object(options)
        case .registeredForRemoteNotifications(let token): o["deviceToken"] = .string(token)
        case .failedToRegisterForRemoteNotifications(let error): o["error"] = .string(error)
        case .receivedRemoteNotification(let userInfo): o["userInfo"] = .object(userInfo)
        case .openURL(let url, let options):
            o["url"] = .string(url)
            o["options"] = .object(options)
        default: break
        }
        return o
    }
}

/// A plugin that hears application events. Destinations hear them on their worker, in order with
/// their events (never concurrently with their other hooks); other plugins on the caller's thread.
public protocol ApplicationLifecycle: Plugin {
    func application(_ event: ApplicationEvent)
}

/// A plugin that hears `openURL` (analytics-swift's protocol), on the caller's thread.
public protocol OpeningURLs {
    func openURL(_ url: URL, options: [String: Any])
}

extension Analytics {
    /// Tells every plugin and library about an application event. `didEnterBackground` and
    /// `willEnterForeground` also track "Application Backgrounded" / "Application Opened"
    /// (`from_background: true`) when `trackApplicationLifecycleEvents` is on, as analytics-swift
    /// does on iOS, and `didEnterBackground` then flushes.
    public func application(_ event: ApplicationEvent) {
        guard !isStopping || event == .willTerminate else { return }
        let info = configuration.application
        if configuration.trackApplicationLifecycleEvents {
            switch event {
            case .didEnterBackground:
                track("Application Backgrounded")
            case .willEnterForeground:
                track("Application Opened", properties: [
                    "version": .string(info?.version ?? ""), "build": .string(info?.build ?? ""), "from_background": true,
                ])
            default: break
            }
        }
        deliver(event)
        if event == .didEnterBackground { flush() }
    }

    /// Every destination through its worker (after the events already queued for it), every other
    /// plugin here; libraries that are not destinations on their own thread (or in their runner's
    /// ordered stream, in process mode).
    func deliver(_ event: ApplicationEvent) {
        for plugin in allPlugins {
            if let destination = plugin as? DestinationPlugin, plugin.type == .destination {
                _ = timeline.worker(forKey: destination.key)?.submit(.application(event))
            } else if let listener = plugin as? ApplicationLifecycle {
                listener.application(event)
            }
        }
    }

    /// The end of `init`: start-up is over unless the first CDN fetch is still running.
    func finishStarting() {
        // With the CDN, the thread of the first fetch marks it (see `startSettingsRefresh`).
        if case .cdn = configuration.settingsLocation {} else { compatibility.markStarted() }
        deliver(.didFinishLaunching(options: [:]))
        if configuration.applicationEventsFromJobControl {
            jobControl.withLock { $0 = JobControlWatcher(analytics: self) }
        }
    }

    /// The start of `shutdown()`: every plugin hears willTerminate while everything still runs.
    func announceTermination() {
        jobControl.withLock { $0 }?.stop()
        deliver(.willTerminate)
    }

    /// `.memory` storage leaves nothing behind; what it held unsent is reported with its count,
    /// never discarded silently. On disk, what is left waits for the next run (logged).
    func removeMemoryStorage() {
        let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination
        let unsent = segment?.pendingEvents ?? 0
        let why = segment?.lastUploadProblem.map { "last upload problem: \($0)" } ?? "not uploaded within flushTimeout"
        let memory: Bool
        if case .memory = configuration.storageMode { memory = true } else { memory = false }
        reportDestinationBacklogs(discarded: memory)
        guard memory else {
            if unsent > 0, let segment {
                log(.warning, "shutdown: \(unsent) Segment.io event(s) not yet uploaded (\(why)) stay in \(segment.queueDirectory) for the next run")
            }
            return
        }
        if unsent > 0, let segment {
            segment.counters.removed(unsent)
            segment.counters.failed(unsent)
            let message = "shutdown: \(unsent) Segment.io event(s) not yet uploaded (\(why)) are discarded with the "
                + "memory storage (.memory); use .disk storage to keep them for the next run"
            report(.delivery(message))
            // To the application's log too (the default one would write it to stderr twice).
            if configuration.logHandler != nil { log(.error, message) }
        }
        try? FileManager.default.removeItem(atPath: configuration.storageDirectory)
    }

    /// What libraries' durable queues still hold at shutdown (events answered retryable, or not
    /// yet handed over): with `.memory` storage they go with the directory — counted as failed and
    /// reported with the count; on disk they wait for the next run (logged).
    private func reportDestinationBacklogs(discarded: Bool) {
        for case let destination as DestinationPlugin in timeline.plugins(of: .destination)
        where destination.key != RoutingRules.segmentDestinationKey {
            guard let stats = timeline.stats(forKey: destination.key), stats.queued > 0 else { continue }
            let n = stats.queued
            let directory = DurableFeed.directory(storage: configuration.storageDirectory, key: destination.key)
            guard discarded else {
                log(.warning, "shutdown: \(n) event(s) not yet delivered by \(destination.key) stay in its queue (\(directory)) for the next run")
                continue
            }
            stats.setQueued(0)
            stats.recordFailure(n)
            let message = "shutdown: \(n) event(s) not yet delivered by \(destination.key) are discarded with the memory "
                + "storage (.memory); use .disk storage to keep them for the next run"
            report(.delivery(message))
            if configuration.logHandler != nil { log(.error, message) }
        }
    }
}
