import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URLSessions of one HTTP client, one per timeout step (``HTTPClient/timeoutSteps``), and
/// what turns requests and answers into URLSession's terms and back: the one mechanism under
/// ``HTTPClient`` (the host's uploads, settings, downloads) and ``LibraryHTTPClient`` (the
/// requests libraries start through `AH_EXT_HTTP_REQUESTS`).
///
/// URLSession on Linux takes the timeout from the session configuration, not from the request,
/// hence a session per step; a library chooses its requests' timeouts, so they come in a few
/// steps (a session per distinct value would never be freed). Every session is ephemeral: no
/// caches, no cookies, at most 4 connections per host, kept alive.
///
/// Threads: [any thread]; the cache is behind its lock.
final class URLSessionSteps: @unchecked Sendable {
    /// What a session's timeout bounds.
    enum Timeout {
        /// The wait for each piece of the answer; the whole exchange may last a day (uploads).
        case idle
        /// The whole exchange (a library's request: its timeout is for all of it).
        case wholeExchange
    }

    private let sessions = Locked<[Int: URLSession]>([:])
    private let timeout: Timeout

    init(timeout: Timeout) {
        self.timeout = timeout
    }

    /// The session of timeout step `step` (seconds), made on first use with `delegate` (nil:
    /// tasks answer through completion handlers; a caller passes the same one every time).
    func session(step: Int, delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        sessions.withLock { cache in
            if let s = cache[step] { return s }
            let config = URLSessionConfiguration.ephemeral
            config.urlCache = nil
            config.httpCookieStorage = nil
            config.httpShouldSetCookies = false
            config.requestCachePolicy = .reloadIgnoringLocalCacheData
            config.httpMaximumConnectionsPerHost = 4
            config.timeoutIntervalForRequest = TimeInterval(step)
            switch timeout {
            case .idle: config.timeoutIntervalForResource = max(TimeInterval(step), 24 * 3600)
            case .wholeExchange: config.timeoutIntervalForResource = TimeInterval(step)
            }
            let s = URLSession(configuration: config, delegate: delegate, delegateQueue: nil)
            cache[step] = s
            return s
        }
    }

    /// Lets every session finish its tasks, then frees it.
    func invalidate() {
        sessions.withLock { cache in
            for s in cache.values { s.finishTasksAndInvalidate() }
            cache.removeAll()
        }
    }

    /// `request` as URLSession's, with the timeout of its step.
    static func urlRequest(_ request: HTTPRequest, step: Int) -> URLRequest {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: TimeInterval(step))
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        return urlRequest
    }

    /// A response's headers, names lower-cased.
    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (k, v) in response.allHeaderFields {
            if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v }
        }
        return headers
    }

    /// Why an exchange gave no response: a timeout (after `step` seconds) or a network error.
    static func failure(_ error: (any Error)?, url: String, step: Int) -> HTTPClientError {
        if let error = error as? URLError, error.code == .timedOut { return .timedOut(url: url, after: Double(step)) }
        return .network(url: url, reason: error.map { "\($0.localizedDescription)" } ?? "no HTTP response")
    }
}

extension NativeHTTPRequest {
    /// `text` as an http or https URL with a host, else nil.
    static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// Why `text` is no URL a library may use.
    static func notHTTPURL(_ text: String) -> String { "\"\(text)\" is not an http or https URL" }

    /// The request as the host sends it to `url` (this request's, parsed): the body gzipped when
    /// asked for (and said so in `Content-Encoding`), none for an empty GET, the timeout's step;
    /// or why it cannot be sent.
    func prepared(url: URL) -> Result<HTTPRequest, NativeHTTPRefusal> {
        var headers = self.headers.map { (name: $0.name, value: $0.value) }
        var body = self.body
        if gzip {
            do throws(GzipError) {
                body = try Gzip.compress(body)
            } catch {
                return .failure(NativeHTTPRefusal(reason: "cannot gzip the body for \(self.url): \(error)"))
            }
            headers.removeAll { $0.name.lowercased() == "content-encoding" }
            headers.append((name: "Content-Encoding", value: "gzip"))
        }
        return .success(HTTPRequest(method: method, url: url, headers: headers, body: body.isEmpty && method == "GET" ? nil : body,
                                    timeout: Double(HTTPClient.timeoutStep(timeout))))
    }
}

/// Why the host does not send a library's request (``NativeHTTPAnswer/refused(_:)``).
struct NativeHTTPRefusal: Error {
    var reason: String
}

extension NativeHTTPHeader {
    /// Headers with lower-cased names as a library gets them: sorted by name.
    static func sorted(_ headers: [String: String]) -> [NativeHTTPHeader] {
        headers.keys.sorted().map { NativeHTTPHeader($0, headers[$0]!) }
    }
}
