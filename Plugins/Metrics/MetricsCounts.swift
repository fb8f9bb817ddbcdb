import AnalyticsIntegration

/// The running counts of one Metrics instance.
struct MetricsCounts {
    var total = 0
    var types: [String: Int] = [:]
    var events: [String: Int] = [:]
    var screens: [String: Int] = [:]
    var resets = 0
    var flushes = 0

    mutating func count(type: String) {
        total += 1
        types[type, default: 0] += 1
    }

    /// The counts as JSON, names sorted so that the file is stable between flushes.
    var json: JSONObject {
        func object(_ counts: [String: Int]) -> JSON {
            .object(JSONObject(counts.sorted { $0.key < $1.key }.map { ($0.key, JSON.number(Double($0.value))) }))
        }
        return ["total": .number(Double(total)), "types": object(types), "events": object(events),
                "screens": object(screens), "resets": .number(Double(resets)), "flushes": .number(Double(flushes))]
    }
}
