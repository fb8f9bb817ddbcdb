import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request for ``HTTPClient``.
package struct HTTPRequest: Sendable {
    package var method: String
    package var url: URL
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]?
    /// Seconds before the request fails with ``HTTPClientError/timedOut``. URLSession on Linux
    /// counts whole seconds for the whole exchange, so this is rounded up to one of
    /// ``HTTPClient/timeoutSteps`` (at most 300 s; not a number: 15 s).
    package var timeout: Double

    package init(method: String, url: URL, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, timeout: Double = 15) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A response: status, headers (names lower-cased) and body.
package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]

    package func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a request produced no response. All of these are worth retrying.
package enum HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut(url: String, after: Double)
    case network(url: String, reason: String)

    package var description: String {
        switch self {
        case .timedOut(let url, let after): return "\(url): no response within \(after) s"
        case .network(let url, let reason): return "\(url): \(reason)"
        }
    }
}

/// A blocking HTTP client over URLSession (libcurl on Linux): https for the real Segment API,
/// keep-alive connection reuse, no caches or cookies. Blocking suits the uploader, which runs on
/// its own thread and must finish one batch before deciding about the next.
package final class HTTPClient: Sendable {
    /// Its sessions, one per timeout step (``URLSessionSteps``); the timeout bounds each wait
    /// for the answer, not the whole exchange.
    private let sessions = URLSessionSteps(timeout: .idle)
    /// `http://` requests of `send` over a plain socket (see ``PlainHTTPTransport``), when asked for.
    private let plain: PlainHTTPTransport?

    /// The whole seconds a request's timeout is rounded up to.
    package static let timeoutSteps = [1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 300]

    /// The step `seconds` is rounded up to (never trapping: a library's number may be anything).
    package static func timeoutStep(_ seconds: Double) -> Int {
        guard !seconds.isNaN else { return 15 }
        return timeoutSteps.first { Double($0) >= seconds } ?? timeoutSteps.last!
    }

    /// - Parameter plainHTTPOverSockets: `send` takes `http://` URLs over a kept-alive socket of
    ///   its own instead of URLSession, whose Linux implementation spins while it waits for an
    ///   answer (the Segment.io uploader asks for this; `https://` always goes through URLSession).
    package init(plainHTTPOverSockets: Bool = false) {
        plain = plainHTTPOverSockets ? PlainHTTPTransport() : nil
    }

    deinit {
        sessions.invalidate()
    }

    /// Sends `request` and waits for the complete response.
    package func send(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPClientError> {
        if let plain, request.url.scheme?.lowercased() == "http" { return plain.send(request) }
        let done = DispatchSemaphore(value: 0)
        let box = Locked<Result<HTTPResponse, HTTPClientError>?>(nil)
        start(request) { result in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 } ?? .failure(.network(url: request.url.absoluteString, reason: "request finished without a result"))
    }

    /// Starts `request` and returns at once; `completion` runs once, on URLSession's queue, with
    /// the response. For callers with several requests running: a thread blocked per request (as
    /// in `send`) on Dispatch's pool can starve the queues URLSession itself answers on, which
    /// stalled parallel requests for seconds on a 2-core machine.
    package func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, HTTPClientError>) -> Void) {
        let step = HTTPClient.timeoutStep(request.timeout)
        let urlText = request.url.absoluteString
        let task = sessions.session(step: step).dataTask(with: URLSessionSteps.urlRequest(request, step: step)) { data, response, error in
            if let http = response as? HTTPURLResponse, error == nil {
                completion(.success(HTTPResponse(status: http.statusCode, headers: URLSessionSteps.headers(of: http), body: data.map { [UInt8]($0) } ?? [])))
            } else {
                completion(.failure(URLSessionSteps.failure(error, url: urlText, step: step)))
            }
        }
        task.resume()
    }
}
