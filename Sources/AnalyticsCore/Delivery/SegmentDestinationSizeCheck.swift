/// Reports an event too large for the Segment API (32 KB serialized) on the caller's thread, while
/// the caller still knows which call it was, instead of later from the upload thread. The
/// Segment.io destination adds it to the client's `after` stage, where it sees the event exactly as
/// it fanned out. When the event's shared text already exists (Segment.io wrote it to its queue
/// during fan-out) its length decides; otherwise this check does not encode: it walks the payload
/// for an upper bound of its JSON size (``SegmentEventSizeBound``) and only encodes — once, shared
/// with the destinations — the rare event whose bound passes the limit.
/// It only reports; the destination refuses the event (other destinations still receive it).
final class SegmentDestinationSizeCheck: Plugin {
    let type = PluginType.after
    private let limit: Int
    private let report: @Sendable (AnalyticsError) -> Void

    init(limit: Int = BatchLimits.maxEventBytes, report: @escaping @Sendable (AnalyticsError) -> Void) {
        self.limit = limit
        self.report = report
    }

    func execute(_ event: Event) -> Event? {
        // Usually the text exists already (Segment.io writes it to its queue during fan-out,
        // before this stage): its length is the answer, no walk needed.
        if let size = event.computedSerializedCount {
            if size > limit, IntegrationsOption.isEnabled(RoutingRules.segmentDestinationKey, in: event.integrations) {
                report(.invalidEvent(SegmentDestinationSizeCheck.describe(event, size: size, limit: limit)))
            }
            return event
        }
        guard SegmentEventSizeBound.mayExceed(event.payload, limit: limit),
              IntegrationsOption.isEnabled(RoutingRules.segmentDestinationKey, in: event.integrations) else { return event }
        let size = event.serializedBytes.count
        if size > limit { report(.invalidEvent(SegmentDestinationSizeCheck.describe(event, size: size, limit: limit))) }
        return event
    }

    /// "Segment.io: track "Big" (messageId m-1) is 40000 bytes serialized, over the limit …"
    static func describe(_ event: Event, size: Int, limit: Int) -> String {
        var what = event.type.rawValue
        if let name = event.event ?? event.name { what += " \"\(name)\"" }
        let id = event.messageId.map { " (messageId \($0))" } ?? ""
        return "Segment.io: \(what)\(id) is \(size) bytes serialized, over the API's limit of \(limit) bytes per event; "
            + "it is not uploaded (other destinations still receive it)"
    }
}
