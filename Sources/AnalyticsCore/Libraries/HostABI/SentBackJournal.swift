import Foundation

/// Events that libraries sent back (`ah_host.send_event`) and that were answered `AH_OK`, kept on
/// disk until they have run through the pipeline.
///
/// Why: a sent-back event runs through the pipeline later, on a host queue (a library sends from
/// inside its own callbacks, which must not be re-entered). Between the answer and that run it
/// would exist in memory only, and a SIGKILL there would lose an event the host had accepted. So
/// the answer waits until the event is in this journal (a ``DurableQueue`` in
/// `<storage>/sent-back`, in the page cache: it survives SIGKILL), and the next client on the same
/// storage runs what the journal still holds when it starts. After a kill, an event that had
/// already run but was not yet crossed off runs again (fewer than `acknowledgeEvery`, with the same
/// `messageId`, on which the server de-duplicates).
///
/// Entries are crossed off in the order they were written, which is the order they run in
/// (the client appends and schedules under one lock). Opened on first use, or at start when an
/// earlier run left entries; removed at shutdown when empty. Thread-safe.
final class SentBackJournal: @unchecked Sendable {
    let directory: String
    private let state = Locked(State())
    private let report: @Sendable (AnalyticsError) -> Void
    /// Ran events are crossed off in groups of this many, and when the host queue is idle at
    /// least `idleCrossOffInterval` after the last crossing off (crossing off rewrites the cursor
    /// file: doing it for every event of a trickle cost three quarters of the signals row).
    static let acknowledgeEvery = 256
    static let idleCrossOffInterval = 0.5

    private struct State {
        var queue: DurableQueue?
        /// Events that ran and are not crossed off yet.
        var ran = 0
        /// Monotonic seconds of the last crossing off.
        var lastCrossOff = 0.0
        var closed = false
    }

    private let secret: Result<StorageSecret, QueueError>

    init(storageDirectory: String, secret: Result<StorageSecret, QueueError>, report: @escaping @Sendable (AnalyticsError) -> Void) {
        directory = (storageDirectory as NSString).appendingPathComponent("sent-back")
        self.secret = secret
        self.report = report
    }

    private static let configuration = DurableQueue.Configuration(maxDiskBytes: 256 << 20, segmentBytes: 1 << 20)

    /// The events an earlier run accepted and did not run (in order), opening the journal if it
    /// holds any. Unreadable entries are reported and skipped.
    func leftOver() -> [Event] {
        guard FileManager.default.fileExists(atPath: directory) else { return [] }
        return state.withLock { s -> [Event] in
            guard let queue = open(&s) else { return [] }
            var events: [Event] = []
            guard let batch = try? queue.peekBatch(maxEvents: .max, maxBytes: .max) else { return [] }
            for index in batch.indices {
                do {
                    guard case .object(let payload) = try JSON(parsing: Array(batch[index])) else { throw EventError.invalid("not a JSON object") }
                    events.append(try Event(payload: payload))
                } catch {
                    report(.storage("sent-back journal \(directory): an entry is not an event (\(error)); skipped"))
                    s.ran += 1  // crossed off with the others
                }
            }
            queue.release(batch)
            // Entries before the first readable one are crossed off at once.
            return events
        }
    }

    /// Writes one event (its JSON text). Returns nil when stored, else why not.
    func append(_ bytes: [UInt8]) -> (reason: String, permanent: Bool)? {
        state.withLock { s -> (reason: String, permanent: Bool)? in
            guard !s.closed else { return ("the host is stopping", false) }
            guard let queue = open(&s) else { return ("the sent-back journal \(directory) cannot be opened", false) }
            do {
                try queue.append(bytes)
                return nil
            } catch {
                if case QueueError.recordTooLarge = error { return ("the event is too large to keep (\(error))", true) }
                return ("the sent-back journal \(directory): \(error)", false)
            }
        }
    }

    /// `count` more of the oldest entries ran through the pipeline; `idle`: nothing else waits
    /// to run, cross everything off now.
    func ran(_ count: Int, idle: Bool) {
        state.withLock { s in
            s.ran += count
            guard s.ran > 0, let queue = s.queue else { return }
            let now = monotonicSeconds()
            guard s.ran >= Self.acknowledgeEvery || (idle && now - s.lastCrossOff >= Self.idleCrossOffInterval) else { return }
            s.lastCrossOff = now
            crossOff(&s, queue)
        }
    }

    /// Crosses off what ran and closes the journal (removing it when nothing is left). Later
    /// appends are refused.
    func close() {
        state.withLock { s in
            s.closed = true
            guard let queue = s.queue else { return }
            if s.ran > 0 { crossOff(&s, queue) }
            let empty = !queue.hasPendingEvents
            do { try queue.close() } catch { report(.storage("sent-back journal \(directory): closing: \(error)")) }
            s.queue = nil
            if empty { try? FileManager.default.removeItem(atPath: directory) }
        }
    }

    private func open(_ s: inout State) -> DurableQueue? {
        if let queue = s.queue { return queue }
        do {
            var configuration = Self.configuration
            configuration.secret = try secret.get()
            let queue = try DurableQueue(directory: directory, configuration: configuration) { [report, directory] error in
                report(.storage("sent-back journal \(directory): \(error)"))
            }
            s.queue = queue
            return queue
        } catch {
            report(.storage("sent-back journal \(directory) cannot be opened: \(error); events sent back are refused (retryable)"))
            return nil
        }
    }

    private func crossOff(_ s: inout State, _ queue: DurableQueue) {
        do {
            let batch = try queue.peekBatch(maxEvents: s.ran, maxBytes: .max)
            try queue.acknowledge(batch)
            s.ran -= batch.count
        } catch {
            report(.storage("sent-back journal \(directory): crossing off: \(error) (those events may run again after a restart)"))
        }
    }
}
