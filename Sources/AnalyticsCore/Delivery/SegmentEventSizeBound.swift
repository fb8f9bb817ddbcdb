/// An upper bound of a payload's JSON text size, computed without encoding it: every string counts
/// as if each of its bytes needed the longest escape (`\u00XX`, 6 bytes), every number as 32 bytes
/// (the longest spelling of a double) or as long as the exact text it keeps.
/// Stops as soon as the bound passes the limit. A walk over an event's few dozen values costs a
/// fraction of encoding it, so the caller's thread can afford it for every event.
enum SegmentEventSizeBound {
    /// Whether the payload's JSON text might be longer than `limit` bytes (false: it surely is not).
    static func mayExceed(_ payload: JSONObject, limit: Int) -> Bool {
        var budget = limit
        return !fits(payload, &budget, PreEncodedObject.current)
    }

    private static func fits(_ object: JSONObject, _ budget: inout Int, _ preEncoded: PreEncodedObject?) -> Bool {
        if let pre = preEncoded, pre.matches(object) {
            budget -= pre.bytes.count
            return budget >= 0
        }
        budget -= 2
        for (key, value) in object {
            budget -= key.utf8.count * 6 + 4  // quotes, colon, comma
            if budget < 0 || !fits(value, &budget, preEncoded) { return false }
        }
        return budget >= 0
    }

    private static func fits(_ value: JSON, _ budget: inout Int, _ preEncoded: PreEncodedObject?) -> Bool {
        switch value {
        case .null, .bool: budget -= 5
        case .number(let n): budget -= max(32, n.literal?.text.utf8.count ?? 0)
        case .string(let s): budget -= s.utf8.count * 6 + 2
        case .array(let items):
            budget -= 2
            for item in items {
                budget -= 1
                if budget < 0 || !fits(item, &budget, preEncoded) { return false }
            }
        case .object(let o): return fits(o, &budget, preEncoded)
        }
        return budget >= 0
    }
}
