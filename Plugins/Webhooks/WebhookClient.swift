import AnalyticsIntegration
import Foundation

/// A POST through the host's HTTP client (ABI 1.3 `AH_EXT_HTTP_REQUESTS`), waited for with a hard
/// deadline: the library carries no HTTP or TLS stack of its own, the host's proxy settings and
/// timeouts apply, and in process mode the host makes the request for the runner, which then needs
/// no network grant. The hook waits on its destination's worker as it would for any blocking call;
/// the answer arrives on a host thread.
final class WebhookClient {
    enum Outcome {
        case response(status: Int)
        case failed(String)
    }

    let timeout: Double
    private let http: HostHTTP

    init(http: HostHTTP, timeout: Double) {
        self.http = http
        self.timeout = timeout
    }

    func post(_ url: URL, headers: [(name: String, value: String)], body: [UInt8]) -> Outcome {
        let request = HostHTTP.Request(method: "POST", url: url.absoluteString,
                                       headers: headers.map { HostHTTP.Header($0.name, $0.value) }, body: body,
                                       timeoutSeconds: timeout)
        let answered = DispatchSemaphore(value: 0)
        let answer = Locked<HostHTTP.Answer?>(nil)
        do {
            try http.start(request) { result in
                answer.withLock { $0 = result }
                answered.signal()
            }
        } catch {
            return .failed("\(error)")
        }
        // The host bounds the exchange by `timeout`; the wait adds a margin for its answer to arrive.
        guard answered.wait(timeout: .now() + timeout + 1) == .success, let result = answer.withLock({ $0 }) else {
            return .failed("no response within \(timeout) s")
        }
        switch result {
        case .response(let status, _, _): return .response(status: status)
        case .failed(let reason): return .failed(reason)
        }
    }
}
