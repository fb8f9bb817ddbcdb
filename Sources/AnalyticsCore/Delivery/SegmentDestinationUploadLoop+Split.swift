/// Splitting a refused batch. The server answers 400 (or 413) to a whole batch when any one of its
/// events is bad, so one event it refuses would otherwise take every good event of its batch down
/// with it. A refused batch of more than one event is sent again in halves, and a refused half in
/// halves again, until every event is delivered or refused by itself; only the events refused
/// alone are dropped — each counted as failed and reported with its messageId and the server's
/// answer. One bad event among n costs about 2·log2(n) more requests.
extension SegmentDestinationUploadLoop {
    /// Statuses that refuse a batch for something in it, worth splitting to find the culprit.
    static let splitStatuses: Set<Int> = [400, 413]

    /// Uploads `upload` (the stored `events`, in order; the batch read at `queuedAt`) and, when the
    /// server refuses it for its content, its halves recursively. True when every event is
    /// settled (delivered or refused for good); false when an attempt was deferred (stopping,
    /// backoff disabled): the caller keeps the whole stored batch for a later pass. Parts settle
    /// in order, so `settled` counts a prefix of `events`: a later pass of this run skips it
    /// (no duplicate, no second count); after a restart the whole batch goes again.
    func settle(_ upload: UploadBatch, events: [ArraySlice<UInt8>], queuedAt start: DurableQueue.Position?, settled: inout Int) -> Bool {
        let host = uploader.configuration.apiHost
        let outcome: UploadOutcome
        let failures = self.failures, counters = self.counters
        // At each failed attempt (a waiting flush returns then, before the retries end).
        let reportFailure = { (failure: UploadFailure) in
            counters.problem("\(failure) from \(host)")
            failures.failed(failure, apiHost: host)
        }
        if let start {
            // The stored batch as read: its attempts are persisted, so X-Retry-Count goes on across runs.
            let queue = self.queue
            outcome = uploader.deliver(upload, retryCount: queue.attempts(at: start), beforeAttempt: { retry in
                queue.recordAttempts(retry + 1, at: start)
            }, afterFailure: reportFailure)
        } else {
            outcome = uploader.deliver(upload, afterFailure: reportFailure)
        }
        if let failure = outcome.failure { counters.problem("\(failure) from \(host)") }
        switch outcome.disposition {
        case .delivered:
            failures.succeeded()
            counters.uploaded(upload.eventCount)
            settled += events.count
            return true
        case .deferred:
            return false
        case .dropped:
            guard case .status(let code, _, let answer)? = outcome.failure, Self.splitStatuses.contains(code) else {
                counters.rejected(upload.eventCount)
                report(.delivery("Segment.io: dropped a batch of \(upload.eventCount) events after \(outcome.attempts) attempt(s) to \(host): \(outcome.reason)"))
                settled += events.count
                return true
            }
            guard events.count > 1 else {
                let id = Self.messageId(of: events.first ?? [])
                let refusal = "HTTP \(code)" + (answer.isEmpty ? "" : ": \(answer)")
                counters.rejected(1)
                counters.refused(messageId: id, reason: refusal)
                report(.delivery("Segment.io: event \(id) refused by \(host) on its own (\(refusal)); dropped, counted as failed"))
                settled += 1
                return true
            }
            let half = events.count / 2
            for part in [events[..<half], events[half...]] {
                let pieces = Array(part)
                guard let piece = Self.batch(of: pieces, writeKey: uploader.configuration.writeKey) else {
                    // Every event already went into a batch once: cannot happen.
                    return false
                }
                if !settle(piece, events: pieces, queuedAt: nil, settled: &settled) { return false }
            }
            return true
        }
    }

    /// A batch of events that were already accepted into one (nil if one no longer fits).
    static func batch(of events: [ArraySlice<UInt8>], writeKey: String) -> UploadBatch? {
        var builder = BatchBuilder(writeKey: writeKey)
        for event in events {
            let added = event.withUnsafeBytes { raw in Result { () throws(BatchEventError) in try builder.append(raw) } }
            guard case .success(true) = added else { return nil }
        }
        return builder.finish()
    }

    /// The stored event's messageId, for reports ("messageId unknown" when it has none).
    static func messageId(of event: ArraySlice<UInt8>) -> String {
        let parsed = event.withUnsafeBufferPointer { try? JSON(parsingUTF8: $0) }
        if let id = parsed?.objectValue?["messageId"]?.stringValue { return "messageId \(id)" }
        return "with no messageId"
    }
}
