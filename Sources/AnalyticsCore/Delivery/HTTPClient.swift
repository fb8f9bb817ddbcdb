import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request for ``HTTPClient``.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: URL
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// Seconds without progress before the request fails with ``HTTPClientError/timedOut``.
    public var timeout: Double

    public init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, timeout: Double = 15) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A response: status, headers (names lower-cased) and body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a request produced no response. All of these are worth retrying.
public enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut(url: String, after: Double)
    case network(url: String, reason: String)

    public var description: String {
        switch self {
        case .timedOut(let url, let after): return "\(url): no response within \(after) s"
        case .network(let url, let reason): return "\(url): \(reason)"
        }
    }
}

/// A blocking HTTP client over URLSession (libcurl on Linux): https for the real Segment API,
/// keep-alive connection reuse, no caches or cookies. Blocking suits the uploader, which runs on
/// its own thread and must finish one batch before deciding about the next.
public final class HTTPClient: Sendable {
    private let session: URLSession

    public init() {
        let config = URLSessionConfiguration.ephemeral
        config.urlCache = nil
        config.httpCookieStorage = nil
        config.httpShouldSetCookies = false
        config.requestCachePolicy = .reloadIgnoringLocalCacheData
        config.httpMaximumConnectionsPerHost = 4
        config.timeoutIntervalForResource = 24 * 3600
        session = URLSession(configuration: config)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends `request` and waits for the complete response.
    public func send(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPClientError> {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }

        let done = DispatchSemaphore(value: 0)
        let box = Locked<Result<HTTPResponse, HTTPClientError>?>(nil)
        let urlText = request.url.absoluteString
        let timeout = request.timeout
        let task = session.dataTask(with: urlRequest) { data, response, error in
            let result: Result<HTTPResponse, HTTPClientError>
            if let http = response as? HTTPURLResponse, error == nil {
                var headers: [String: String] = [:]
                for (k, v) in http.allHeaderFields {
                    if let k = k as? String, let v = v as? String { headers[k.lowercased()] = v }
                }
                result = .success(HTTPResponse(status: http.statusCode, headers: headers, body: data.map { [UInt8]($0) } ?? []))
            } else if let error = error as? URLError, error.code == .timedOut {
                result = .failure(.timedOut(url: urlText, after: timeout))
            } else {
                result = .failure(.network(url: urlText, reason: error.map { "\($0.localizedDescription)" } ?? "no HTTP response"))
            }
            box.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        done.wait()
        return box.withLock { $0 } ?? .failure(.network(url: urlText, reason: "request finished without a result"))
    }
}
