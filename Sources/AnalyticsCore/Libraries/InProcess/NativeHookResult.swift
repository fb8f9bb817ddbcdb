import CAnalyticsABI

/// The outcome of one hook call, from the library's status code and error text. Retryable and
/// permanent failures are kept apart so the destination can back off on one and report the other.
public enum NativeHookResult: Sendable, Equatable {
    case ok
    case retryable(String)
    case permanent(String)

    /// Maps a status; any value the header does not define counts as permanent.
    init(status: ah_status, message: @autoclosure () -> String, hook: StaticString) {
        switch status {
        case ah_status(AH_OK):
            self = .ok
        case ah_status(AH_ERR_RETRYABLE):
            let text = message()
            self = .retryable(text.isEmpty ? "\(hook) failed (retryable) without a reason" : text)
        case ah_status(AH_ERR_PERMANENT):
            let text = message()
            self = .permanent(text.isEmpty ? "\(hook) failed without a reason" : text)
        default:
            let text = message()
            self = .permanent("\(hook) returned unknown status \(status)" + (text.isEmpty ? "" : ": \(text)"))
        }
    }

    public var isOK: Bool {
        if case .ok = self { return true }
        return false
    }
}
