import Foundation

/// Tells the application about failed uploads as they happen: every failed attempt's cause
/// reaches the error handler and the log handler once per cause and destination — with the host,
/// the status or error, and what to do about it — not once per retry. The causes seen are
/// forgotten when an upload succeeds again, so the next outage is reported too.
///
/// Before this, a retryable failure (a refused connection, https to a plain-HTTP server) was only
/// counted and retried: nothing reached the application until the retry limits dropped the batch,
/// minutes or hours later.
final class UploadFailureReports: Sendable {
    private let destination: String
    private let report: @Sendable (AnalyticsError) -> Void
    /// The application's own log handler, if it has one (the default one writes to stderr, where
    /// the default error handler already wrote the report).
    private let log: (@Sendable (LogLevel, String) -> Void)?
    private let reported = Locked<Set<String>>([])

    init(destination: String, report: @escaping @Sendable (AnalyticsError) -> Void,
         log: (@Sendable (LogLevel, String) -> Void)?) {
        self.destination = destination
        self.report = report
        self.log = log
    }

    /// One attempt to `apiHost` failed; reported unless this cause was reported since the last
    /// success.
    func failed(_ failure: UploadFailure, apiHost: String) {
        let diagnosis = Self.diagnose(failure, apiHost: apiHost)
        let key = diagnosis.cause + " " + apiHost
        guard reported.withLock({ $0.insert(key).inserted }) else { return }
        let message = "\(destination): upload to \(apiHost) failed: \(diagnosis.cause) (\(failure)). \(diagnosis.fix)"
        report(.delivery(message))
        log?(.error, message)
    }

    /// An upload succeeded: later failures are news again.
    func succeeded() {
        if reported.withLock({ !$0.isEmpty }) { reported.withLock { $0.removeAll() } }
    }

    /// The cause in a few words (the de-duplication key) and the fix.
    static func diagnose(_ failure: UploadFailure, apiHost: String) -> (cause: String, fix: String) {
        let keep = "The events stay queued and are retried."
        let https = !apiHost.contains("://") || apiHost.lowercased().hasPrefix("https://")
        let plain = apiHost.range(of: "://").map { String(apiHost[$0.upperBound...]) } ?? apiHost
        switch failure {
        case .status(let code, _, _):
            switch code {
            case 401, 403:
                return ("HTTP \(code)", "The server refused the write key: check Configuration.writeKey (or the settings' apiKey).")
            case 404:
                return ("HTTP \(code)", "Nothing answers at this path: apiHost should end with the API version (api.segment.io/v1).")
            case 429:
                return ("HTTP \(code)", "Rate limited: uploads slow down as the server asks. \(keep)")
            case 400, 413:
                return ("HTTP \(code)", "The server refused the batch's content: unless httpConfig retries this status, the batch is split to find the events refused, which are dropped and counted as failed.")
            case 500...599:
                return ("HTTP \(code)", "The server failed. \(keep)")
            default:
                return ("HTTP \(code)", "Unexpected answer: check that apiHost is a Segment-compatible tracking API.")
            }
        case .network(let why):
            let text = why.lowercased()
            if text.contains("ssl") || text.contains("tls") || text.contains("secure") || text.contains("certificate") {
                return ("TLS handshake failed",
                        https ? "If the server speaks plain HTTP, write apiHost as http://\(plain); otherwise check its certificate. \(keep)"
                              : "Check the server's TLS setup. \(keep)")
            }
            if text.contains("could not connect") || text.contains("refused") || text.contains("couldn't connect") {
                return ("connection refused",
                        "Nothing accepts connections there: check apiHost (host and port) and that the server runs. \(keep)")
            }
            if text.contains("hostname") || text.contains("resolve") || text.contains("find host") {
                return ("host not found", "The host name does not resolve: check apiHost and DNS. \(keep)")
            }
            if text.contains("lost") || text.contains("reset") || text.contains("closed") {
                if https {
                    return ("connection lost", "The server closed the connection; if it speaks plain HTTP, write apiHost as http://\(plain). \(keep)")
                }
                return ("connection lost", "The server closed the connection before answering. \(keep)")
            }
            return ("network error", "Check the network and apiHost. \(keep)")
        case .timedOut(let after):
            // A plain-HTTP server given a TLS handshake usually waits for a request line and
            // never answers: https to such a server looks like this.
            let plainHint = https ? " If the server speaks plain HTTP (a TLS handshake to it goes unanswered), write apiHost as http://\(plain)." : ""
            return ("no response", "Nothing answered within \(after) s: check the network and the server.\(plainHint) \(keep)")
        case .invalidEndpoint:
            return ("invalid apiHost", "Write apiHost as host/path (https assumed) or a full http(s):// URL; the batch cannot be sent.")
        case .compression:
            return ("compression failed", "The batch could not be compressed (zlib); it is dropped and counted as failed.")
        }
    }
}
