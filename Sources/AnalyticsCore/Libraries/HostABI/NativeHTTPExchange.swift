import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request a library started through `AH_EXT_HTTP_REQUESTS` (ABI 1.3), copied out of its
/// borrowed C struct so that it can cross threads (and, in process mode, the wire).
public struct NativeHTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var headers: [NativeHTTPHeader]
    public var body: [UInt8]
    /// The host gzips `body` and says so in `Content-Encoding`.
    public var gzip: Bool
    /// Seconds for the whole exchange.
    public var timeout: Double

    public init(method: String, url: String, headers: [NativeHTTPHeader] = [], body: [UInt8] = [], gzip: Bool = false, timeout: Double = 15) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.gzip = gzip
        self.timeout = timeout
    }
}

public struct NativeHTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// How one request ended: the server's answer (any status), or why there was none.
public enum NativeHTTPAnswer: Sendable, Equatable {
    /// Headers with lower-cased names.
    case response(status: Int, headers: [NativeHTTPHeader], body: [UInt8])
    /// No answer; worth trying again later (network error, timeout, cancelled).
    case failed(String)
    /// The host could not send this request at all.
    case refused(String)
}

extension HostServices.HTTP {
    /// Sends through `client` (URLSession: https, the environment's proxy settings, redirects
    /// followed) and answers on a pool thread, never on URLSession's own queue (a slow `done`
    /// must not hold up other answers). Only http and https URLs.
    static func sending(through client: HTTPClient) -> @Sendable (NativeHTTPRequest, @escaping @Sendable (NativeHTTPAnswer) -> Void) -> Void {
        { request, answer in
            guard let url = NativeHTTPRequest.httpURL(request.url) else {
                answer(.refused(NativeHTTPRequest.notHTTPURL(request.url)))
                return
            }
            DispatchQueue.global().async {
                let prepared: HTTPRequest
                switch request.prepared(url: url) {
                case .success(let r): prepared = r
                case .failure(let refusal): answer(.refused(refusal.reason)); return
                }
                // Not waited for here: several requests of an instance run at once, and a pool
                // thread blocked per request can starve URLSession's own queues.
                client.start(prepared) { sent in
                    DispatchQueue.global().async {
                        switch sent {
                        case .success(let response):
                            answer(.response(status: response.status, headers: NativeHTTPHeader.sorted(response.headers), body: response.body))
                        case .failure(let error):
                            answer(.failed(error.description))
                        }
                    }
                }
            }
        }
    }
}
