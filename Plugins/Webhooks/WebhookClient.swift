import AnalyticsIntegration
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A blocking POST over URLSession with a hard deadline.
///
/// The deadline is enforced twice: through the session's own timeouts and by waiting for the
/// task at most that long and cancelling it. The second matters on Linux, where swift-corelibs-
/// foundation was seen here to ignore `URLRequest.timeoutInterval` and to sit out the session's
/// 60 s default when a server closes the connection without answering; a hook must not block
/// its destination's worker longer than configured.
final class WebhookClient {
    enum Outcome {
        case response(status: Int)
        case failed(String)
    }

    let timeout: Double
    private let session: URLSession

    init(timeout: Double) {
        self.timeout = timeout
        let config = URLSessionConfiguration.ephemeral
        config.urlCache = nil
        config.httpCookieStorage = nil
        config.httpShouldSetCookies = false
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.timeoutIntervalForRequest = timeout
        config.timeoutIntervalForResource = timeout
        session = URLSession(configuration: config)
    }

    deinit { session.invalidateAndCancel() }

    func post(_ url: URL, headers: [(name: String, value: String)], body: [UInt8]) -> Outcome {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body)

        let done = DispatchSemaphore(value: 0)
        let result = Locked<Outcome?>(nil)
        let task = session.dataTask(with: request) { _, response, error in
            let outcome: Outcome
            if let http = response as? HTTPURLResponse, error == nil {
                outcome = .response(status: http.statusCode)
            } else {
                outcome = .failed(error.map { $0.localizedDescription } ?? "no HTTP response")
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            task.cancel()
            return .failed("no response within \(timeout) s")
        }
        return result.withLock { $0 } ?? .failed("the request ended without a result")
    }
}
