/// What a flush achieved, for the caller that must know whether its events left
/// (`flush(completion:)` with a parameter): uploaded, still waiting (and why), failed for good.
/// A flush never waits out a failing network (it returns at the first failed attempt, the retries
/// go on in the background), so "not everything was delivered" is an ordinary answer, not an error.
public struct FlushResult: Sendable, CustomStringConvertible {
    /// Events the Segment.io server accepted while the flush ran.
    public var uploaded: Int
    /// Events still waiting for Segment.io (on disk, or in memory with `.memory(n)` storage):
    /// retried later, or by the next run.
    public var pending: Int
    /// Events that failed for good at any destination while the flush ran (refused by the server,
    /// retry limits reached, dropped by a full queue), each also reported to the error handler.
    public var failed: Int
    /// Destinations other than Segment.io that still hold events after the flush, with how many.
    public var queued: [String: Int]
    /// Why events are still waiting, when something failed: the last upload problem
    /// ("network error: … from <host>").
    public var problem: String?
    /// Every destination finished its flush within `flushTimeout`.
    public var finishedInTime: Bool

    /// Everything accepted before the flush was delivered: nothing pending, queued or failed.
    public var deliveredEverything: Bool { pending == 0 && failed == 0 && queued.isEmpty && finishedInTime }

    public var description: String {
        if deliveredEverything { return "flushed: \(uploaded) event(s) uploaded, nothing pending" }
        var parts = ["\(uploaded) uploaded", "\(pending) pending for Segment.io"]
        if failed > 0 { parts.append("\(failed) failed") }
        for (key, n) in queued.sorted(by: { $0.key < $1.key }) { parts.append("\(n) queued for \(key)") }
        if !finishedInTime { parts.append("not every destination finished in time") }
        if let problem { parts.append("last problem: \(problem)") }
        return "not everything delivered: " + parts.joined(separator: ", ")
    }
}

extension Analytics {
    /// Flushes (as ``flush()``) and says what became of the events.
    func flushMeasured() -> FlushResult {
        let segment = find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination
        let uploadedBefore = segment?.uploadedEvents ?? 0
        let failedBefore = failedEvents()
        let inTime = flush()
        var queued: [String: Int] = [:]
        for case let destination as DestinationPlugin in timeline.plugins(of: .destination) where destination !== segment {
            if let n = timeline.stats(forKey: destination.key)?.queued, n > 0 { queued[destination.key] = n }
        }
        let pending = segment?.pendingEvents ?? 0
        let failed = failedEvents() - failedBefore
        let problem = pending > 0 || failed > 0 ? segment?.lastUploadProblem : nil
        return FlushResult(uploaded: (segment?.uploadedEvents ?? 0) - uploadedBefore, pending: pending, failed: failed,
                           queued: queued, problem: problem, finishedInTime: inTime)
    }

    /// Events every destination gave up on so far (failed, overflowed, abandoned).
    private func failedEvents() -> Int {
        timeline.plugins(of: .destination).reduce(0) { sum, plugin in
            guard let key = (plugin as? DestinationPlugin)?.key, let s = timeline.stats(forKey: key) else { return sum }
            return sum + s.failed + s.overflowed + s.abandoned
        }
    }
}
