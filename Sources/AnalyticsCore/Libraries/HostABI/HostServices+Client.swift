import Foundation

extension HostServices {
    /// What `AH_EXT_CLIENT` offers one instance, as Swift closures (every one [any thread]).
    package struct Client: Sendable {
        /// The user's traits.
        public var traits: @Sendable () -> JSONObject
        /// Resets the user now; the plugins' reset follows later on host threads.
        public var reset: @Sendable () -> NativeHookResult
        /// Asks for a flush and returns at once.
        public var flush: @Sendable () -> NativeHookResult
        /// The instance's private directory, created on first use (nil when it cannot be created).
        public var storageDirectory: @Sendable () -> String?
        /// The options the application gave this library's key (`Configuration.pluginOptions`).
        public var options: @Sendable () -> JSONObject

        public init(traits: @escaping @Sendable () -> JSONObject,
                    reset: @escaping @Sendable () -> NativeHookResult,
                    flush: @escaping @Sendable () -> NativeHookResult,
                    storageDirectory: @escaping @Sendable () -> String?,
                    options: @escaping @Sendable () -> JSONObject) {
            self.traits = traits
            self.reset = reset
            self.flush = flush
            self.storageDirectory = storageDirectory
            self.options = options
        }
    }

}

extension HostServices.Client {
    /// The client's services for library `key`: its directory is `<storage>/plugins/<key>`.
    static func forwarding(to analytics: Analytics, key: String) -> HostServices.Client {
        let weak = WeakAnalytics(analytics)
        let directory = analytics.configuration.storageDirectory + "/plugins/" + HostServices.Client.directoryName(for: key)
        let options = analytics.configuration.pluginOptions[key] ?? [:]
        return HostServices.Client(
            traits: { weak.value?.traits ?? [:] },
            reset: {
                guard let analytics = weak.value else { return .retryable("the client is gone") }
                analytics.resetUserNowAndPluginsLater()
                return .ok
            },
            flush: {
                guard let analytics = weak.value else { return .retryable("the client is gone") }
                DispatchQueue.global().async { analytics.flush() }
                return .ok
            },
            storageDirectory: {
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    return directory
                } catch {
                    weak.value?.report(.storage("cannot create the directory of plugin \(key) (\(directory)): \(error.localizedDescription)"))
                    return nil
                }
            },
            options: { options })
    }

    /// A key as one path component: "/" and a leading "." cannot climb out of `plugins/`.
    static func directoryName(for key: String) -> String {
        var name = key.replacingOccurrences(of: "/", with: "_")
        if name.hasPrefix(".") { name = "_" + name.dropFirst() }
        return name
    }
}

extension HostServices {
    /// What `AH_EXT_HTTP` offers: a blocking GET through the host's HTTP client.
    package struct HTTP: Sendable {
        /// The outcome of one GET: the server's answer (any status), or why there was none.
        package enum Outcome: Sendable {
            case response(status: Int, body: [UInt8])
            case malformedURL(String)
            case failed(String)
        }

        public var get: @Sendable (_ url: String, _ timeoutSeconds: Double) -> Outcome
        /// `AH_EXT_HTTP_REQUESTS` (ABI 1.3): starts a request and returns at once; `answer` is called
        /// exactly once, later, on another thread.
        public var send: @Sendable (NativeHTTPRequest, _ answer: @escaping @Sendable (NativeHTTPAnswer) -> Void) -> Void
        /// The same GET with the body handed to `receive` as it arrives (on the calling thread),
        /// cancelled when `receive` returns false: `.response` then carries the pieces taken so far
        /// and `stopped` is true. Nil: `get` serves, the whole body at once.
        public var stream: (@Sendable (_ url: String, _ timeoutSeconds: Double, _ receive: ([UInt8]) -> Bool)
                              -> (outcome: Outcome, stopped: Bool))?

        public init(get: @escaping @Sendable (_ url: String, _ timeoutSeconds: Double) -> Outcome,
                    send: @escaping @Sendable (NativeHTTPRequest, _ answer: @escaping @Sendable (NativeHTTPAnswer) -> Void) -> Void = { _, answer in
                        SideQueue.async("http refusal") { answer(.refused("this host sends no HTTP requests")) }
                    }) {
            self.get = get
            self.send = send
        }

        /// GETs through `client` (URLSession: https, redirects followed). Only http and https URLs.
        public static func using(_ client: HTTPClient) -> HostServices.HTTP {
            HostServices.HTTP(get: { text, timeout in
                guard let url = NativeHTTPRequest.httpURL(text) else { return .malformedURL(NativeHTTPRequest.notHTTPURL(text)) }
                switch client.send(HTTPRequest(method: "GET", url: url, timeout: timeout)) {
                case .success(let response): return .response(status: response.status, body: response.body)
                case .failure(let error): return .failed(error.description)
                }
            }, send: sending(through: client))
        }

        /// Streaming GETs (``StreamingGet``: the body as it arrives; redirects never leave https,
        /// plain http only to this machine), and `get` on top of them. Only http and https URLs.
        public static func streaming() -> HostServices.HTTP {
            let stream: @Sendable (String, Double, ([UInt8]) -> Bool) -> (outcome: Outcome, stopped: Bool) = { text, timeout, receive in
                guard let url = NativeHTTPRequest.httpURL(text) else { return (.malformedURL(NativeHTTPRequest.notHTTPURL(text)), false) }
                switch StreamingGet.run(url, timeout: timeout, receive: receive) {
                case .completed(let status): return (.response(status: status, body: []), false)
                case .stopped(let status): return (.response(status: status, body: []), true)
                case .refused(let why): return (.malformedURL(why), false)
                case .failed(let why): return (.failed(why), false)
                }
            }
            var service = HostServices.HTTP { text, timeout in
                var body: [UInt8] = []
                let (outcome, _) = stream(text, timeout) { body += $0; return true }
                if case .response(let status, _) = outcome { return .response(status: status, body: body) }
                return outcome
            }
            service.stream = stream
            service.send = { request, answer in
                LibraryHTTPClient.shared.send(request, policy: LibraryHTTPPolicy(unrestricted: true), answer: answer)
            }
            return service
        }

        /// One service for every library of the process.
        package static let shared = HostServices.HTTP.streaming()
    }
}
