import Foundation
import Synchronization

/// The Segment.io destination's upload thread. It is separate from the destination so that
/// appending events never waits for the network: the caller's thread writes to the durable queue
/// and kicks this thread; this thread reads batches from the queue, uploads them through the
/// ``Uploader`` (gzip, Basic auth, `X-Retry-Count`, fresh `sentAt`, the retry policy) and
/// acknowledges what the server accepted or refused for good. Retryable failures keep the batch on
/// disk; the uploader backs off (honouring `Retry-After`) on this thread, so a failing network
/// never blocks a caller. `X-Retry-Count` is the number of earlier attempts of the batch, persisted
/// in the queue directory before each attempt, so it goes on counting across runs.
///
/// A pass uploads until the queue is empty. Passes start when the destination kicks (`flushAt`
/// events pending), every `flushInterval` seconds, and on `flush()`.
final class SegmentDestinationUploadLoop: @unchecked Sendable {
    /// How a pass ended.
    enum PassEnd { case drained, deferred, stopped, closed }

    let uploader: Uploader
    let queue: DurableQueue
    let counters: SegmentDestinationCounters
    let report: @Sendable (AnalyticsError) -> Void
    /// Failed attempts, told to the application as they happen (once per cause).
    let failures: UploadFailureReports
    private let interval: Double
    private let control: Control
    private let sleeper: SegmentDestinationSleeper
    /// Set by `kick()` until the next pass starts: one wake-up however many events arrive.
    private let kickPending = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    /// A stored batch whose split was cut short (a deferred part): where it starts and how many
    /// of its leading events are settled already. Upload thread only.
    private var partlySettled: (start: DurableQueue.Position, events: Int)?
    /// How long a kicked pass waits for more events before reading its batch.
    private static let linger = 0.01

    /// The loop's shared state, guarded by its condition.
    private final class Control: @unchecked Sendable {
        let condition = NSCondition()
        var kicked = false
        /// After a pass ended deferred (backoff disabled by `httpConfig`, unreadable queue),
        /// kicks are ignored until a flush or the interval: no tight loop against a failing server.
        var suspended = false
        /// Flush generations: requested by callers, taken by a starting pass, finished by a pass.
        var requested = 0
        var served = 0
        var settled = 0
        /// The uploader waits out a backoff right now.
        var sleeping = false
        var stopping = false
        var finished = false
    }

    init(queue: DurableQueue, upload: UploadConfiguration, flushInterval: Double,
         counters: SegmentDestinationCounters, report: @escaping @Sendable (AnalyticsError) -> Void,
         log: (@Sendable (LogLevel, String) -> Void)? = nil) {
        self.queue = queue
        self.counters = counters
        self.report = report
        self.failures = UploadFailureReports(destination: RoutingRules.segmentDestinationKey, report: report, log: log)
        self.interval = max(0.05, flushInterval)
        let control = Control()
        self.control = control
        let sleeper = SegmentDestinationSleeper { waiting in
            control.condition.lock()
            control.sleeping = waiting
            control.condition.broadcast()
            control.condition.unlock()
        }
        self.sleeper = sleeper
        self.uploader = Uploader(configuration: upload, sleeper: sleeper)
        let thread = Thread { [self] in run() }
        thread.name = "Segment.io upload"
        thread.start()
    }

    // MARK: Triggers

    /// Asks for a pass soon (cheap when one is already due: an atomic flag, no lock).
    func kick() {
        if kickPending.exchange(true, ordering: .acquiringAndReleasing) { return }
        control.condition.lock()
        control.kicked = true
        control.condition.signal()
        control.condition.unlock()
    }

    /// Asks for a pass now, without lingering (a caller waits for room at the disk cap).
    func urge() {
        control.condition.lock()
        control.requested += 1
        control.condition.broadcast()
        control.condition.unlock()
    }

    /// Starts a pass over everything on disk and waits until it has uploaded all of it, until an
    /// attempt fails (the uploader is backing off: waiting would only hold the caller), or until
    /// `timeout` seconds passed. Returns true when the queue was drained.
    @discardableResult
    func flushAndWait(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, timeout))
        control.condition.lock()
        defer { control.condition.unlock() }
        control.requested += 1
        let generation = control.requested
        control.condition.broadcast()
        while control.settled < generation && !control.sleeping && !control.finished {
            if !control.condition.wait(until: deadline) { break }
        }
        return control.settled >= generation && lastPassDrained
    }

    private var lastPassDrained = false  // guarded by control.condition

    /// Uploads everything on disk — retries, backoff and `Retry-After` included — and waits until
    /// the queue is empty or `timeout` seconds passed. Returns true when the queue was drained.
    @discardableResult
    func drain(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, timeout))
        control.condition.lock()
        defer { control.condition.unlock() }
        while !control.finished {
            control.requested += 1
            let generation = control.requested
            control.condition.broadcast()
            while control.settled < generation && !control.finished {
                if !control.condition.wait(until: deadline) { return false }
            }
            if lastPassDrained || control.finished { break }
            // The pass ended early (backoff disabled by httpConfig, unreadable queue): try again
            // after a short pause rather than spin, until the deadline.
            if !control.condition.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.5))) && Date() >= deadline { return false }
        }
        return lastPassDrained
    }

    /// Ends the thread: cuts a backoff wait short and waits (at most `timeout`) for an upload in
    /// flight to finish, so that its acknowledgement is not lost. Returns false if it did not end.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        stopping.store(true, ordering: .releasing)
        control.condition.lock()
        control.stopping = true
        control.condition.broadcast()
        control.condition.unlock()
        sleeper.cancel()
        let deadline = Date(timeIntervalSinceNow: timeout)
        control.condition.lock()
        defer { control.condition.unlock() }
        while !control.finished {
            if !control.condition.wait(until: deadline) { return control.finished }
        }
        return true
    }

    // MARK: The thread

    private func run() {
        var lastPass = monotonicSeconds()
        while true {
            control.condition.lock()
            while !control.stopping && control.requested <= control.served && !(control.kicked && !control.suspended) {
                let left = lastPass + interval - monotonicSeconds()
                if left <= 0 { break }
                _ = control.condition.wait(until: Date(timeIntervalSinceNow: left))
            }
            if control.stopping {
                control.condition.unlock()
                break
            }
            // Woken by a kick alone (events arriving, no flush or drain asked for): linger a few
            // milliseconds so that a batch collects more than `flushAt` events — fewer, larger
            // uploads while calls stream in. A flush, a drain or stop ends the linger at once.
            lingerLocked()
            let generation = control.requested
            control.served = generation
            control.kicked = false
            control.suspended = false
            kickPending.store(false, ordering: .releasing)
            control.condition.unlock()

            let end = pass()
            lastPass = monotonicSeconds()

            control.condition.lock()
            control.settled = max(control.settled, generation)
            lastPassDrained = end == .drained
            if end == .deferred { control.suspended = true }
            control.condition.broadcast()
            control.condition.unlock()
            if end == .closed || end == .stopped { break }
        }
        control.condition.lock()
        control.finished = true
        control.condition.broadcast()
        control.condition.unlock()
    }

    /// With `control.condition` held: unless a flush, drain or stop is asked for, waits up to
    /// `linger` while fewer than a full batch of events are pending.
    private func lingerLocked() {
        guard control.requested <= control.served && counters.pending < BatchLimits.maxBatchEvents else { return }
        let until = Date(timeIntervalSinceNow: Self.linger)
        while !control.stopping && control.requested <= control.served && counters.pending < BatchLimits.maxBatchEvents {
            if !control.condition.wait(until: until) { break }
        }
    }

    /// Uploads batches until the queue is empty, a batch is deferred, or the loop stops.
    private func pass() -> PassEnd {
        var first = true
        // The last batch's buffers, filled again by the next one (same pages, no fresh zeroed ones).
        var spareHead: [UInt8] = []
        var spareBytes: [UInt8] = []
        while true {
            if stopping.load(ordering: .acquiring) { return .stopped }
            if !first {
                // Between batches too: calls streaming in fill the next batch meanwhile.
                control.condition.lock()
                lingerLocked()
                control.condition.unlock()
            }
            first = false
            var builder = BatchBuilder(writeKey: uploader.configuration.writeKey, reusing: &spareHead)
            // Payload budget so that the finished body (framing, commas, sentAt, writeKey) fits.
            // At most half the disk cap: while one batch is out, callers waiting for room (batch
            // input at the cap) fill the other half, and the next batch is ready when it returns.
            let budget = min(BatchLimits.maxBatchBytes - builder.currentSize - (BatchLimits.maxBatchEvents - 1),
                             queue.configuration.maxDiskBytes / 2)
            let batch: DurableQueue.Batch
            do {
                batch = try queue.peekBatch(maxEvents: BatchLimits.maxBatchEvents, maxBytes: budget, reusing: &spareBytes)
            } catch {
                if case .closed = error { return .closed }
                report(.storage("Segment.io: cannot read the upload queue: \(error)"))
                return .deferred
            }
            if batch.isEmpty { return .drained }

            var rejected = 0
            var overflow = false
            // The stored events that went into the body, for sending parts again (see `settle`).
            var included: [ArraySlice<UInt8>] = []
            included.reserveCapacity(batch.count)
            // Leading events a cut-short split of this same batch already settled: not sent again.
            var skip = partlySettled.map { $0.start == batch.start ? $0.events : 0 } ?? 0
            let skipped = skip
            for index in batch.indices {
                let slice = batch[index]
                if skip > 0, slice.withUnsafeBytes({ raw in (try? BatchLimits.check(event: raw)) != nil }) {
                    skip -= 1
                    continue
                }
                let added = slice.withUnsafeBytes { raw in Result { () throws(BatchEventError) in try builder.append(raw) } }
                switch added {
                case .success(true): included.append(slice)
                case .success(false): overflow = true
                case .failure(let error):
                    rejected += 1
                    report(.delivery("Segment.io: a stored \(error); removed from the upload queue"))
                }
                if overflow { break }
            }
            if overflow {
                // Cannot happen with the budget above; never acknowledge what was not sent.
                queue.release(batch)
                report(.delivery("Segment.io: a batch of \(batch.count) stored events does not fit in \(BatchLimits.maxBatchBytes) bytes; kept on disk"))
                return .deferred
            }
            counters.failed(rejected)

            if !builder.isEmpty {
                let upload = builder.finish()
                // Acknowledged only once every event of the batch is delivered or refused for
                // good, however many parts it was split into: a kill in between sends it again
                // whole (parts already delivered are duplicated, nothing is lost).
                var settled = 0
                guard settle(upload, events: included, queuedAt: batch.start, settled: &settled) else {
                    partlySettled = (batch.start, skipped + settled)
                    queue.release(batch)
                    return stopping.load(ordering: .acquiring) ? .stopped : .deferred
                }
                spareHead = upload.head
            }
            partlySettled = nil
            do {
                counters.removed(try queue.acknowledge(batch))
                spareBytes = batch.recycledBytes
            } catch {
                if case .closed = error { return .closed }
                report(.storage("Segment.io: cannot remove an uploaded batch from the queue (it may be sent again): \(error)"))
                return .deferred
            }
        }
    }
}

/// The upload thread's retry sleeper: an ``InterruptibleSleeper`` (shutdown cuts any wait short)
/// that also tells the upload loop when a backoff wait begins and ends. A wait begins only after a
/// failed attempt, which is how a waiting `flush()` learns that the network is failing and returns
/// at once instead of sitting out a backoff that may last minutes.
final class SegmentDestinationSleeper: RetrySleeper {
    private let sleeper = InterruptibleSleeper()
    private let waiting: @Sendable (Bool) -> Void

    init(waiting: @escaping @Sendable (Bool) -> Void) { self.waiting = waiting }

    func sleep(seconds: Double) -> Bool {
        waiting(true)
        defer { waiting(false) }
        return sleeper.sleep(seconds: seconds)
    }

    /// Ends the current and every later wait.
    func cancel() { sleeper.cancel() }
}
