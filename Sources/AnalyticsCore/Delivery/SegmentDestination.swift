import Foundation
import Synchronization

/// The built-in Segment.io destination: every event it receives is written to the durable queue
/// in `<storageDirectory>/queue` and uploaded in batches to the tracking API by its own upload
/// thread (``SegmentDestinationUploadLoop``).
///
/// "Accepted" means on disk: it is an ``InlineDestination``, so the write happens on the caller's
/// thread inside the fan-out, and when `track()` (or any call) returns, the event is in the queue
/// file (in the kernel's page cache, through the queue's mapped segment or write(2): it survives
/// SIGKILL; power loss per ``SegmentDestinationOptions/fsync``). At the
/// disk cap, apps drop the oldest events (counted as failed, reported); with
/// ``SegmentDestinationOptions/whenQueueFull`` `.waitForRoom` (the command) the call waits for
/// uploads to free room instead.
///
/// Settings: `integrations["Segment.io"]` gives `apiKey`, `apiHost` and `httpConfig` (retry policy);
/// `configuration.segment` overrides the host for tests, `configuration.maxQueueBytes` caps the disk.
/// Uploads start at `flushAt` pending events, every `flushInterval` seconds, and on `flush()`,
/// which waits a bounded time (``SegmentDestinationOptions/flushWait``) and never hangs on a dead
/// network. Failures all reach the client's error handler and count in the destination's stats.
///
/// Created by ``SegmentDestinationFactory``, which the client registers unless
/// `configuration.autoAddSegmentDestination` is false.
public final class SegmentDestination: EncodedEventConsumer, InlineDestination {
    public let key = RoutingRules.segmentDestinationKey
    public let timeline = Timeline()

    /// The queue's directory.
    public let queueDirectory: String
    /// Why the queue could not be opened (another process holds it, bad cap…): events are refused.
    public let storageError: QueueError?

    let queue: DurableQueue?
    private let loop: SegmentDestinationUploadLoop?
    let counters = SegmentDestinationCounters()
    private let endpoint: Locked<SegmentDestinationEndpoint>
    private let configuration: Configuration
    private let report: @Sendable (AnalyticsError) -> Void
    private let log: @Sendable (LogLevel, String) -> Void
    private let sizeCheck: SegmentDestinationSizeCheck
    private let client = Locked(WeakAnalytics())
    /// Events refused because the queue is not open, and how many of them were already reported.
    private let refused = Atomic<Int>(0)
    private let refusedReported = Atomic<Int>(0)

    /// Opens the queue and starts the upload thread. Never throws: a queue that cannot be opened
    /// is reported here and makes the destination refuse events with that error.
    public init(settings: JSONObject, analytics: Analytics) {
        configuration = analytics.configuration
        report = analytics.report
        log = analytics.log
        sizeCheck = SegmentDestinationSizeCheck(report: analytics.report)
        let endpoint = SegmentDestinationEndpoint(settings: settings, configuration: configuration)
        self.endpoint = Locked(endpoint)
        for warning in endpoint.warnings { analytics.log(.warning, "Segment.io settings: \(warning)") }

        queueDirectory = (configuration.storageDirectory as NSString).appendingPathComponent("queue")
        let counters = self.counters
        let report = analytics.report
        var queueConfiguration = DurableQueue.Configuration(maxDiskBytes: configuration.maxQueueBytes,
                                                            maxRecordBytes: BatchLimits.maxEventBytes,
                                                            fsync: configuration.segment.fsync,
                                                            whenFull: configuration.segment.whenQueueFull)
        do {
            queueConfiguration.secret = try analytics.storageSecret.get()
            let queue = try DurableQueue(directory: queueDirectory, configuration: queueConfiguration) { error in
                if case .droppedOverCap(let events, _, _) = error {
                    counters.removed(events)
                    counters.failed(events)
                }
                report(.storage("Segment.io upload \(error)"))
            }
            let backlog = queue.pendingEvents
            counters.setBacklog(backlog)
            self.queue = queue
            self.storageError = nil
            let loop = SegmentDestinationUploadLoop(queue: queue, upload: endpoint.upload,
                                                    flushInterval: configuration.flushInterval,
                                                    counters: counters, report: report,
                                                    log: configuration.logHandler == nil ? nil : analytics.log)
            self.loop = loop
            queue.whenWaitingForRoom { loop.urge() }
            if backlog > 0 { loop.kick() }
        } catch {
            self.queue = nil
            self.storageError = error
            self.loop = nil
            report(.storage("Segment.io: cannot open the upload queue \(queueDirectory): \(error); events for Segment.io are refused (counted as failed) until the client is restarted"))
        }
    }

    // MARK: Observation

    /// Events the server has accepted since this destination started.
    public var uploadedEvents: Int { counters.uploaded }
    /// Batches the server has accepted since this destination started.
    public var uploadedBatches: Int { counters.uploadedBatches }
    /// Events waiting on disk (see ``DestinationStats/queued``).
    public var pendingEvents: Int { counters.pending }
    /// Events earlier runs left on disk, found when the queue opened (part of ``pendingEvents``
    /// until uploaded).
    public var backlogEvents: Int { counters.backlog }
    /// Events the server refused for good (e.g. HTTP 400) or that hit a retry limit.
    public var rejectedEvents: Int { counters.rejected }
    /// Events the server refused by themselves (once their batch was split down to them): which
    /// event ("messageId …") and the server's answer; the first few only (``rejectedEvents``
    /// counts them all).
    public var refusedByServer: [(event: String, reason: String)] { counters.refusals }
    /// The last failed upload attempt ("HTTP 500: … from <host>", "network error: …"), nil if none.
    public var lastUploadProblem: String? { counters.lastProblem }
    /// The upload settings in force (after the latest settings update).
    package var uploadConfiguration: UploadConfiguration { endpoint.withLock { $0.upload } }

    // MARK: Plugin

    public func configure(analytics: Analytics) {
        client.withLock { $0 = WeakAnalytics(analytics) }
        let mine = analytics.timeline.find(key: key) === self
        counters.attach(mine ? analytics.timeline.stats(forKey: key) : nil)
        analytics.add(plugin: sizeCheck)
    }

    /// Stores the event on disk (its encoding, made once by the client) and kicks the uploader at
    /// `flushAt` pending events. Too large an event is refused with an error, never queued.
    public func execute(_ event: Event) -> Event? {
        guard let queue else {
            refuse()
            return nil
        }
        // The client's encoding, read in place (usually written already, for every reader).
        var pending = 0
        let stored = event.withSerializedBytes { bytes -> Result<Void, QueueError>? in
            if bytes.count > BatchLimits.maxEventBytes {
                counters.failed(1)
                // Unchanged since fan-out (still sharing the client's encoding): the size check
                // already reported it on the caller's thread.
                if event.encoding == nil {
                    report(.invalidEvent(SegmentDestinationSizeCheck.describe(event, size: bytes.count, limit: BatchLimits.maxEventBytes)))
                }
                return nil
            }
            // Counted before it is on disk: the upload thread may send and acknowledge it before this
            // thread runs again, and its count must not go below zero (that left "1 still queued").
            pending = counters.appended()
            return Result { () throws(QueueError) in try queue.append(bytes) }
        }
        guard let stored else { return nil }
        if case .failure(let error) = stored {
            counters.removed(1)
            counters.failed(1)
            report(.storage("Segment.io: event \(event.messageId ?? "?") not queued: \(error)"))
            return nil
        }
        if pending >= configuration.flushAt { loop?.kick() }
        return event
    }

    public func update(settings: Settings, type: UpdateType) {
        guard let mine = settings.integrationSettings(forKey: key) else { return }
        let new = SegmentDestinationEndpoint(settings: mine, configuration: configuration)
        let changed = endpoint.withLock { current -> Bool in
            defer { current = new }
            return current != new
        }
        guard changed else { return }
        for warning in new.warnings { log(.warning, "Segment.io settings: \(warning)") }
        loop?.uploader.update(configuration: new.upload)
    }

    /// Everything received so far is already on disk; uploads it, waiting at most
    /// `configuration.segment.flushWait` seconds (less when the network fails).
    public func flush() {
        guard let loop else {
            reportRefused()
            return
        }
        loop.flushAndWait(timeout: min(configuration.segment.flushWait, configuration.flushTimeout / 2))
    }

    /// Uploads everything on disk — this run's events and earlier runs' backlog — retrying with
    /// backoff and `Retry-After` as the policy says, and waits until the queue is empty or
    /// `timeout` seconds passed. Returns true when everything was uploaded (or refused for good).
    @discardableResult
    public func drain(timeout: Double) -> Bool {
        guard let loop else {
            reportRefused()
            return false
        }
        return loop.drain(timeout: timeout)
    }

    /// Stops the upload thread (cutting a backoff short) and closes the queue, releasing its lock
    /// for the next client. Whatever was not uploaded stays on disk for the next run.
    public func shutdown() {
        loop?.stop(timeout: 2)
        if let queue {
            do { try queue.close() } catch {
                if case .closed = error {} else { report(.storage("Segment.io: closing the upload queue: \(error)")) }
            }
        }
        reportRefused()
        if let analytics = client.withLock({ $0.value }) { analytics.remove(plugin: sizeCheck) }
    }

    // MARK: Refusing events

    private func refuse() {
        counters.failed(1)
        if refused.wrappingAdd(1, ordering: .relaxed).newValue == 1 { reportRefused() }
    }

    /// One report for every run of refused events, not one per event.
    private func reportRefused() {
        let total = refused.load(ordering: .relaxed)
        let before = refusedReported.exchange(total, ordering: .relaxed)
        guard total > before, let storageError else { return }
        report(.storage("Segment.io: refused \(total - before) event(s): the upload queue \(queueDirectory) is not open (\(storageError))"))
    }
}

/// Makes the built-in Segment.io destination from `integrations["Segment.io"]`. The client adds
/// this factory on its own (as analytics-swift adds its SegmentDestination) unless
/// `Configuration.autoAddSegmentDestination` is false or a factory for the key is already given.
public struct SegmentDestinationFactory: IntegrationFactory {
    public let key = RoutingRules.segmentDestinationKey

    public init() {}

    public func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin {
        SegmentDestination(settings: settings, analytics: analytics)
    }

    /// `configuration` with this factory added when the client should upload to Segment.
    static func registering(in configuration: Configuration) -> Configuration {
        guard configuration.autoAddSegmentDestination,
              !configuration.integrationFactories.contains(where: { $0.key == RoutingRules.segmentDestinationKey }) else {
            return configuration
        }
        var c = configuration
        c.integrationFactories.append(SegmentDestinationFactory())
        return c
    }
}

/// Knobs of the built-in Segment.io destination that settings do not carry: where tests point it,
/// how long a `flush()` waits for the network, how hard the queue syncs. Part of ``Configuration``
/// (`configuration.segment`); the disk cap is ``Configuration/maxQueueBytes``.
public struct SegmentDestinationOptions: Sendable {
    /// Overrides `integrations["Segment.io"].apiHost` (and every refresh of it), e.g.
    /// `http://127.0.0.1:8080/v1` for a local server. nil: the settings decide.
    public var apiHost: String?
    /// Seconds without a response before an upload attempt fails (and is retried).
    public var requestTimeout: Double = 15
    /// zlib level of request bodies (1 fastest … 9; 0 uncompressed).
    public var compressionLevel: Int32 = 1
    /// Longest time `flush()` waits for the pending events to be uploaded before returning with
    /// the rest still queued on disk. A flush returns sooner when an attempt fails (network down,
    /// server error): the events stay queued and the backoff continues in the background.
    public var flushWait: Double = 5
    /// When appended events are forced to the device (a SIGKILL loses nothing either way).
    package var fsync: DurableQueue.FsyncPolicy = .never
    /// At the disk cap (``Configuration/maxQueueBytes``): drop the oldest events (apps, the
    /// default: a call never waits for the network) or wait for uploads to free room (batch input).
    package var whenQueueFull: DurableQueue.FullPolicy = .dropOldest

    public init() {}
}
