import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One GET for `AH_EXT_HTTP` whose body is handed to the caller as it arrives, on the caller's
/// thread, so a library's size cap holds while the bytes come in (the transfer is cancelled as
/// soon as the library's sink refuses more) instead of after the whole body sat in memory.
///
/// Redirects are followed, but never away from https, and a plain-http one only to this machine
/// (127.0.0.0/8, [::1], localhost): what a library downloads (LivePlugins: code it will run)
/// cannot be moved to an unauthenticated origin by a redirect.
final class StreamingGet: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Outcome: Sendable, Equatable {
        /// The whole body was handed over.
        case completed(status: Int)
        /// `receive` refused a piece; the transfer was cancelled.
        case stopped(status: Int)
        /// A redirect was refused (the reason says where it pointed and why).
        case refused(String)
        case failed(String)
    }

    private let condition = NSCondition()
    // Guarded by `condition`:
    private var pieces: [Data] = []
    private var status = 0
    private var finished: String??
    private var refusal: String?
    /// The time limit, for the report (as `HTTPClient` words it).
    private let seconds: TimeInterval

    private init(seconds: TimeInterval) { self.seconds = seconds }

    /// Blocks until the transfer ends; `receive` gets the body in order and returns false to stop.
    static func run(_ url: URL, timeout: Double, receive: ([UInt8]) -> Bool) -> Outcome {
        let seconds = TimeInterval(max(1, timeout.rounded(.up)))
        let get = StreamingGet(seconds: seconds)
        let config = URLSessionConfiguration.ephemeral
        config.urlCache = nil
        config.httpCookieStorage = nil
        config.httpShouldSetCookies = false
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.timeoutIntervalForRequest = seconds
        config.timeoutIntervalForResource = seconds
        let session = URLSession(configuration: config, delegate: get, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        request.httpMethod = "GET"
        let task = session.dataTask(with: request)
        task.resume()
        return get.deliver(to: receive, cancel: { task.cancel() }, url: url.absoluteString, timeout: seconds)
    }

    private func deliver(to receive: ([UInt8]) -> Bool, cancel: () -> Void, url: String, timeout: Double) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while pieces.isEmpty && finished == nil { condition.wait() }
            if !pieces.isEmpty {
                let batch = pieces
                pieces.removeAll()
                let code = status
                condition.unlock()
                var accepted = true
                for piece in batch where accepted { accepted = receive([UInt8](piece)) }
                condition.lock()
                if !accepted {
                    cancel()
                    return .stopped(status: code)
                }
                continue
            }
            if let refusal { return .refused(refusal) }
            if case .some(.some(let error)) = finished { return .failed("\(url): \(error)") }
            return .completed(status: status)
        }
    }

    // MARK: URLSession callbacks (its delegate queue)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        condition.lock()
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        condition.unlock()
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        condition.lock()
        pieces.append(data)
        condition.broadcast()
        condition.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        let from = task.originalRequest?.url ?? response.url
        if let to = request.url, let why = Self.refusal(from: from, to: to) {
            condition.lock()
            refusal = why
            condition.unlock()
            completionHandler(nil)
            task.cancel()
            return
        }
        completionHandler(request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        condition.lock()
        if let error = error as? URLError, error.code == .timedOut {
            finished = .some("no complete response within \(seconds) s")
        } else {
            finished = .some(error.map { $0.localizedDescription })
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Why a redirect from `from` to `to` is not followed (nil: it is).
    static func refusal(from: URL?, to: URL) -> String? {
        let scheme = to.scheme?.lowercased()
        if scheme == "https" { return nil }
        if scheme == "http", isLoopback(to), from.map(isLoopback) ?? false { return nil }
        return "redirected to \(to.absoluteString): a redirect never leaves https, and goes to plain http only from and to "
            + "this machine (127.0.0.1, [::1], localhost)"
    }

    static func isLoopback(_ url: URL) -> Bool {
        guard let host = url.host?.lowercased() else { return false }
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
