/// Why one upload attempt failed.
package enum UploadFailure: Sendable, Equatable, CustomStringConvertible {
    /// The server answered with a non-2xx status. `body` is the start of its answer (for reports).
    case status(code: Int, retryAfter: Double?, body: String)
    /// No answer: refused, reset, DNS, TLS …
    case network(String)
    case timedOut(after: Double)
    /// The body could not be compressed (zlib failure; not expected in practice).
    case compression(String)
    /// The configured `apiHost` does not make a URL.
    case invalidEndpoint(String)

    package var description: String {
        switch self {
        case .status(let code, let retryAfter, let body):
            var s = "HTTP \(code)"
            if let retryAfter { s += " (Retry-After \(retryAfter) s)" }
            if !body.isEmpty { s += ": \(body)" }
            return s
        case .network(let why): return "network error: \(why)"
        case .timedOut(let after): return "no response within \(after) s"
        case .compression(let why): return "could not compress the batch: \(why)"
        case .invalidEndpoint(let why): return "invalid upload endpoint: \(why)"
        }
    }
}

/// The result of one POST.
package enum UploadAttemptResult: Sendable, Equatable {
    case accepted(status: Int)
    case failed(UploadFailure)
}

/// What became of a batch after ``Uploader/deliver(_:retryCount:)``.
package struct UploadOutcome: Sendable, Equatable, CustomStringConvertible {
    package enum Disposition: Sendable, Equatable {
        /// The server accepted the batch: delete it.
        case delivered
        /// The batch can never be delivered (400, other permanent 4xx, 501, retry limits): delete
        /// it and report `failure`.
        case dropped
        /// Not delivered yet, but worth trying later (shutdown interrupted the wait, or backoff is
        /// disabled by `httpConfig`): keep the batch, and pass `nextRetryCount` next time.
        case deferred
    }

    package var disposition: Disposition
    /// Requests made by this call.
    package var attempts: Int
    /// The last failure (nil when delivered at the first attempt).
    package var failure: UploadFailure?
    /// Why a batch was dropped or deferred, in words.
    package var reason: String
    /// Waits taken between attempts, in seconds.
    package var waits: [Double]
    /// The `X-Retry-Count` the next attempt of this batch should carry.
    package var nextRetryCount: Int

    package var description: String {
        switch disposition {
        case .delivered: return "delivered after \(attempts) attempt(s)"
        case .dropped: return "dropped after \(attempts) attempt(s): \(reason)"
        case .deferred: return "deferred after \(attempts) attempt(s): \(reason)"
        }
    }
}
