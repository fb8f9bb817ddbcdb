import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Network signals for an app's `URLSession`s: a `URLProtocol` that performs each request of an
/// observed session itself (through a plain session of its own) and emits a `request` and a
/// `response` signal for hosts the allow/block lists let through. Response bodies are attached
/// (`data`) only when they are JSON and at most `maximumNetworkBodyBytes`; request bodies the same
/// way. The host's own traffic (uploads, settings, webhooks) uses its own sessions and is never
/// seen; Segment's hosts are blocked whatever the lists say.
///
///     let configuration = URLSessionConfiguration.default
///     analytics.signals?.observeNetwork(configuration)
///     let session = URLSession(configuration: configuration)
public final class NetworkSignalsProtocol: URLProtocol {
    /// The signals that observed sessions report to (the last client that asked).
    private static let target = Locked<Target?>(nil)
    struct Target {
        weak var signals: Signals?
        var rules: NetworkHostRules
        var maximumBodyBytes: Int
    }
    private static let handledKey = "analytics-host.network-signals"
    private static let inner: URLSession = {
        let c = URLSessionConfiguration.ephemeral
        c.urlCache = nil
        return URLSession(configuration: c)
    }()

    static func observe(_ configuration: URLSessionConfiguration, signals: Signals, rules: NetworkHostRules, maximumBodyBytes: Int) {
        target.withLock { $0 = Target(signals: signals, rules: rules, maximumBodyBytes: maximumBodyBytes) }
        _ = inner  // made here, never lazily on the loading system's queue
        var classes = configuration.protocolClasses ?? []
        if !classes.contains(where: { $0 == NetworkSignalsProtocol.self }) { classes.insert(NetworkSignalsProtocol.self, at: 0) }
        configuration.protocolClasses = classes
    }

    public override class func canInit(with request: URLRequest) -> Bool {
        guard let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, URLProtocol.property(forKey: handledKey, in: request) == nil,
              let t = target.withLock({ $0 }), t.signals != nil else { return false }
        return t.rules.observes(host: host)
    }

    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    private let innerTask = Locked<URLSessionDataTask?>(nil)

    public override func startLoading() {
        guard let t = NetworkSignalsProtocol.target.withLock({ $0 }), let signals = t.signals,
              let url = request.url else {
            client?.urlProtocol(self, didFailWithError: URLError(.cancelled))
            return
        }
        let requestId = MessageID.make()
        let method = request.httpMethod ?? "GET"
        let contentType = request.value(forHTTPHeaderField: "Content-Type")
        signals.emit(NetworkSignal(action: .request, url: url.absoluteString,
                                   body: NetworkSignalsProtocol.json(request.httpBody, contentType: contentType, limit: t.maximumBodyBytes),
                                   contentType: contentType, method: method, requestId: requestId))
        let marked = (request as NSURLRequest).mutableCopy() as! NSMutableURLRequest
        URLProtocol.setProperty(true, forKey: NetworkSignalsProtocol.handledKey, in: marked)
        let limit = t.maximumBodyBytes
        // URLProtocol is not Sendable; the loading system calls back on its own threads anyway.
        nonisolated(unsafe) let me = self
        let forwarded = marked as URLRequest
        let session = NetworkSignalsProtocol.inner
        // Not from this thread: startLoading runs on the loading system's queue, which the inner
        // session needs too (a synchronous wait there deadlocks on Linux).
        DispatchQueue.global().async {
            let inner = session.dataTask(with: forwarded) { data, response, error in
                let client = me.client
                if let error {
                    client?.urlProtocol(me, didFailWithError: error)
                    return
                }
                if let http = response as? HTTPURLResponse {
                    let type = http.value(forHTTPHeaderField: "Content-Type")
                    signals.emit(NetworkSignal(action: .response, url: url.absoluteString,
                                               body: NetworkSignalsProtocol.json(data, contentType: type, limit: limit),
                                               contentType: type, method: method, status: http.statusCode, requestId: requestId))
                }
                if let response { client?.urlProtocol(me, didReceive: response, cacheStoragePolicy: .notAllowed) }
                if let data, !data.isEmpty { client?.urlProtocol(me, didLoad: data) }
                client?.urlProtocolDidFinishLoading(me)
            }
            me.innerTask.withLock { $0 = inner }
            inner.resume()
        }
    }

    public override func stopLoading() { innerTask.withLock { $0 }?.cancel() }

    /// A body as JSON when it says it is JSON, parses, and is small enough.
    static func json(_ body: Data?, contentType: String?, limit: Int) -> JSON? {
        guard let body, !body.isEmpty, body.count <= limit,
              let type = contentType?.lowercased(), type.contains("json") else { return nil }
        return try? JSON(parsing: body)
    }
}

extension Signals {
    /// Adds network signals to sessions made from `configuration` (see ``NetworkSignalsProtocol``),
    /// with the allow/block lists and body bound in force now.
    public func observeNetwork(_ configuration: URLSessionConfiguration) {
        let c = currentConfiguration
        NetworkSignalsProtocol.observe(configuration, signals: self, rules: NetworkHostRules(c), maximumBodyBytes: c.maximumNetworkBodyBytes)
    }
}
