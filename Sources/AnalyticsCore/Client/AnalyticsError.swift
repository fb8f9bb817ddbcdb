/// Everything that can go wrong, as the error handler receives it. Each case names the thing
/// (destination, plugin, file) and the reason, so a log line is enough to act on.
public enum AnalyticsError: Error, Sendable, CustomStringConvertible {
    /// A call the spec does not allow (empty event name, group without groupId, NaN…).
    case invalidEvent(String)
    /// A destination's queue was full; its oldest events were dropped.
    case queueOverflow(destination: String, dropped: Int, capacity: Int)
    /// A plugin or destination reported a failure.
    case plugin(name: String, message: String)
    /// Settings could not be read or applied; the previous settings stay in force.
    case settings(String)
    /// User state or the event queue could not be read or written.
    case storage(String)
    /// An integration library could not be loaded (the message names the file).
    case loader(String)
    /// Uploading failed.
    case delivery(String)

    public var description: String {
        switch self {
        case .invalidEvent(let m): return "invalid event: \(m)"
        case .queueOverflow(let d, let n, let cap): return "destination \(d): queue full (\(cap) events), dropped the \(n) oldest"
        case .plugin(let name, let m): return "plugin \(name): \(m)"
        case .settings(let m): return "settings: \(m)"
        case .storage(let m): return "storage: \(m)"
        case .loader(let m): return "plugin library: \(m)"
        case .delivery(let m): return "delivery: \(m)"
        }
    }
}
