import AnalyticsCore

/// The per-destination table printed at the end of a run.
enum Summary {
    /// - Parameter drainTimeout: set when the Segment.io queue was not drained in that time.
    static func render(analytics: Analytics, accepted: Int, rejected: Int, interrupted: Bool, drainTimeout: Double? = nil) -> String {
        // Process isolation adds two columns when a library ran in a process of its own.
        let isolated = analytics.timeline.plugins(of: .destination).contains { $0 is ProcessDestination }
        var header = ["destination", "offered", "delivered", "dropped", "skipped", "failed", "queued", "abandoned"]
        if isolated { header += ["retried", "restarts"] }
        var rows: [[String]] = []
        for destination in analytics.timeline.plugins(of: .destination) {
            guard let d = destination as? DestinationPlugin, let s = analytics.timeline.stats(forKey: d.key) else { continue }
            var row = [TerminalText.escaped(d.key), "\(s.received + s.skipped)", "\(delivered(d, s))", "\(s.dropped + s.overflowed)",
                       "\(s.skipped)", "\(s.failed)", "\(s.queued)", "\(s.abandoned)"]
            if isolated { row += d is ProcessDestination ? ["\(s.retried)", "\(s.restarts)"] : ["-", "-"] }
            rows.append(row)
        }
        rows.sort { $0[0] < $1[0] }
        let widths = header.indices.map { i in max(header[i].count, rows.map { $0[i].count }.max() ?? 0) }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                i == 0 ? c.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                       : String(repeating: " ", count: widths[i] - c.count) + c
            }.joined(separator: "  ")
        }
        var out = "\(accepted) events accepted, \(rejected) rejected\(interrupted ? " (interrupted)" : "")\n"
        out += line(header) + "\n"
        for r in rows { out += line(r) + "\n" }
        out.removeLast()  // the columns are explained in `run --help` and docs/command-line.md, not after every run
        if let segment = analytics.find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination {
            out += "\n" + segmentLine(segment, queued: analytics.timeline.stats(forKey: segment.key)?.queued ?? segment.pendingEvents,
                                      drainTimeout: drainTimeout)
        }
        return out
    }

    /// Every column, in the table's order, for `run --help` (and docs/command-line.md). A
    /// destination may act on only part of what it accepts (File's "types" setting writes only
    /// those types): it says so in its own log line.
    static let legend = """
        The summary: one row per destination.
        offered: this run's events for the destination, each counted in one of the next columns (for Segment.io
        with its backlog from earlier runs added); delivered: accepted by it (a library's call returned OK;
        Segment.io: uploaded and accepted by the server); dropped: by filters, destination middleware or a full
        queue; skipped: not sent to it (the integrations option, the tracking plan, a library with no hook for
        that call); failed: will never be delivered (refused by the server or the library, or not stored: a full
        disk); queued: kept on disk for a later run;
        abandoned: never delivered because the destination hung (a call that did not return within --hook-timeout;
        not kept). A destination may use only part of what it accepts (File's "types" setting writes only those
        types): it says so in its own log line. With a library in process mode (--isolate), two more columns:
        retried: events sent again to a process-isolated library after its process crashed or hung with them in flight
        (at-least-once: it may have seen them before); restarts: times that process was started again ("-": in-process).
        """

    /// Events that got through: a destination's stats count an event handed to it and, when its
    /// delivery then fails, failed as well; Segment.io's got through when the server accepted it.
    static func delivered(_ destination: DestinationPlugin, _ s: DestinationStats) -> Int {
        if let segment = destination as? SegmentDestination { return segment.uploadedEvents }
        return max(0, s.delivered - s.failed)
    }

    /// "Segment.io: backlog …, uploaded …, still queued …, rejected …", then where and why.
    static func segmentLine(_ segment: SegmentDestination, queued: Int, drainTimeout: Double?) -> String {
        let host = segment.uploadConfiguration.apiHost
        var out = "Segment.io: \(segment.backlogEvents) from earlier runs (backlog), \(segment.uploadedEvents) uploaded to \(host), "
        out += "\(queued) still queued, \(segment.rejectedEvents) rejected by the server"
        if queued > 0 {
            out += "\nSegment.io: \(queued) event\(queued == 1 ? "" : "s") kept on disk in \(segment.queueDirectory), sent on the next run"
            if let drainTimeout { out += " (not uploaded within the drain time of \(drainTimeout) s)" }
        }
        let refused = segment.refusedByServer
        for (event, reason) in refused {
            out += "\nSegment.io: the server refused event \(TerminalText.escaped(event)): \(TerminalText.escaped(reason))"
        }
        if segment.rejectedEvents > refused.count && !refused.isEmpty {
            out += "\nSegment.io: … and \(segment.rejectedEvents - refused.count) more event(s) rejected (reported above)"
        }
        if let problem = segment.lastUploadProblem {
            out += "\nSegment.io: last failed upload: \(problem)"
        }
        return out
    }

    /// What went wrong with libraries (those not created, errors they logged, plugins whose calls
    /// failed), one line each; nil when nothing did. Each counts for exit status 3.
    static func libraryProblems(_ problems: LibraryProblems) -> String? {
        var lines: [String] = []
        for n in problems.notCreated {
            lines.append("\(TerminalText.escaped(n.key)) was not created: \(TerminalText.escaped(n.reason))")
        }
        for p in problems.pluginFailures {
            let outcome = p.failClosed ? "dropped (fail-closed)" : "passed on unchanged"
            lines.append("plugin \(TerminalText.escaped(p.plugin)) (from \(TerminalText.escaped(p.owner))) failed on \(p.count) "
                         + "event\(p.count == 1 ? "" : "s"), \(outcome)")
        }
        for l in problems.logged {
            lines.append("\(TerminalText.escaped(l.key)) logged \(l.count) error\(l.count == 1 ? "" : "s"), the first: "
                         + TerminalText.escaped(l.first))
        }
        guard !lines.isEmpty else { return nil }
        return "problems reported by libraries (exit status 3):\n" + lines.map { "  " + $0 }.joined(separator: "\n")
    }

    /// One line about signals for `run --signals`.
    static func signals(_ s: SignalsStats, fromFile: Int, rejected: Int) -> String {
        var out = "signals: \(s.emitted) emitted (\(fromFile) from the signals file, \(rejected) rejected; "
        out += "\(s.instrumented) from events, \(s.loopGuarded) events made from signals not looped back), "
        out += "\(s.delivered) delivered to subscribers"
        if s.shedQueueFull + s.shedBeforeReady > 0 { out += ", \(s.shedQueueFull + s.shedBeforeReady) shed" }
        return out
    }
}
