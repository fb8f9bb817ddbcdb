/// The errors an ``Integration`` throws to say how the host should treat a failure: the two
/// statuses of the C ABI. Any other error thrown by an integration counts as permanent.
public enum IntegrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// May go away (network down, server overloaded, rate limited): the host retries the same
    /// call later, with backoff.
    case retryable(String)
    /// Will not go away (bad input, bad configuration, rejected by the server): reported, not retried.
    case permanent(String)

    public var message: String {
        switch self {
        case .retryable(let text), .permanent(let text): return text
        }
    }

    public var description: String {
        switch self {
        case .retryable(let text): return "retryable: \(text)"
        case .permanent(let text): return "permanent: \(text)"
        }
    }
}
