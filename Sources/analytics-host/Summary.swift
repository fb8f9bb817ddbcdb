import AnalyticsCore

/// The per-destination table printed at the end of a run.
enum Summary {
    static func render(analytics: Analytics, accepted: Int, rejected: Int, interrupted: Bool) -> String {
        let header = ["destination", "offered", "delivered", "dropped", "skipped", "failed", "queued", "abandoned"]
        var rows: [[String]] = []
        for destination in analytics.timeline.plugins(of: .destination) {
            guard let d = destination as? DestinationPlugin, let s = analytics.timeline.stats(forKey: d.key) else { continue }
            rows.append([d.key, "\(s.received + s.skipped)", "\(s.delivered)", "\(s.dropped + s.overflowed)",
                         "\(s.skipped)", "\(s.failed)", "\(s.queued)", "\(s.abandoned)"])
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
        out += "dropped: by filters, destination middleware or a full queue; skipped: by the integrations option or the tracking plan; "
        out += "abandoned: never delivered because the destination hung (a call that did not return within --hook-timeout; not kept)"
        if let segment = analytics.find(key: "Segment.io") as? SegmentDestination {
            let pending = analytics.timeline.stats(forKey: "Segment.io")?.queued ?? segment.pendingEvents
            if pending > 0 {
                out += "\nSegment.io: \(pending) event\(pending == 1 ? "" : "s") not uploaded yet (no answer from \(segment.uploadConfiguration.apiHost)); "
                out += "kept on disk in \(segment.queueDirectory), sent on the next run"
            }
        }
        return out
    }
}
