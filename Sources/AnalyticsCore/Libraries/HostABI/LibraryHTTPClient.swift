import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends the requests libraries start through `AH_EXT_HTTP_REQUESTS` (in process mode, those its
/// runner forwards), under each library's `LibraryHTTPPolicy`: the origin is checked before the
/// request and again at every redirect (a refused redirect ends the request), the response body
/// is taken as it arrives and the transfer cancelled past the cap (never buffered whole), and
/// sessions come one per timeout step (`URLSessionSteps`, the mechanism `HTTPClient` uses too),
/// so a library choosing a new timeout per request cannot make the host open sessions without end.
final class LibraryHTTPClient: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    static let shared = LibraryHTTPClient()

    /// Its sessions (``URLSessionSteps``, with this client as their delegate: it checks
    /// redirects and takes bodies as they arrive); a request's timeout bounds its whole exchange.
    private let sessions = URLSessionSteps(timeout: .wholeExchange)

    /// One request in flight (guarded by `transfers`' lock).
    private final class Transfer: @unchecked Sendable {
        let policy: LibraryHTTPPolicy
        let url: String
        let timeout: Int
        let answer: @Sendable (NativeHTTPAnswer) -> Void
        var status = 0
        var headers: [NativeHTTPHeader] = []
        var body: [UInt8] = []
        var refusal: String?

        init(policy: LibraryHTTPPolicy, url: String, timeout: Int, answer: @escaping @Sendable (NativeHTTPAnswer) -> Void) {
            self.policy = policy
            self.url = url
            self.timeout = timeout
            self.answer = answer
        }
    }
    private let transfers = Locked<[ObjectIdentifier: Transfer]>([:])

    /// Checks and sends `request` (headers and method checked again: in process mode they come
    /// from the runner); `answer` runs once, on a pool thread.
    func send(_ request: NativeHTTPRequest, policy: LibraryHTTPPolicy, answer: @escaping @Sendable (NativeHTTPAnswer) -> Void) {
        DispatchQueue.global().async { [self] in
            if let problem = request.problem {
                answer(.refused(problem))
                return
            }
            guard let url = URL(string: request.url) else {
                answer(.refused(NativeHTTPRequest.notHTTPURL(request.url)))
                return
            }
            if let problem = policy.problem(with: url) {
                answer(.refused(problem))
                return
            }
            let prepared: HTTPRequest
            switch request.prepared(url: url) {
            case .success(let r): prepared = r
            case .failure(let refusal): answer(.refused(refusal.reason)); return
            }
            let step = HTTPClient.timeoutStep(prepared.timeout)
            let task = sessions.session(step: step, delegate: self).dataTask(with: URLSessionSteps.urlRequest(prepared, step: step))
            transfers.withLock { $0[ObjectIdentifier(task)] = Transfer(policy: policy, url: request.url, timeout: step, answer: answer) }
            task.resume()
        }
    }

    private func transfer(_ task: URLSessionTask) -> Transfer? { transfers.withLock { $0[ObjectIdentifier(task)] } }

    // MARK: URLSession callbacks (its delegate queue)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if let http = response as? HTTPURLResponse, let t = transfer(dataTask) {
            let headers = NativeHTTPHeader.sorted(URLSessionSteps.headers(of: http))
            transfers.withLock { _ in
                t.status = http.statusCode
                t.headers = headers
            }
            if http.expectedContentLength > Int64(t.policy.maxResponseBytes) {
                transfers.withLock { _ in t.refusal = Self.overCap(t) }
                completionHandler(.cancel)
                return
            }
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let t = transfer(dataTask) else { return }
        let over = transfers.withLock { _ -> Bool in
            guard t.refusal == nil else { return false }
            if t.body.count + data.count > t.policy.maxResponseBytes {
                t.refusal = Self.overCap(t)
                t.body = []
                return true
            }
            t.body.append(contentsOf: data)
            return false
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        guard let t = transfer(task), let url = request.url else { completionHandler(nil); return }
        // Resolving may block: not on the session's queue. URLSession waits for the handler.
        let handler = Carried(completionHandler), next = Carried(request), carriedTask = Carried(task)
        DispatchQueue.global().async { [self] in
            if let problem = t.policy.problem(with: url) {
                transfers.withLock { _ in t.refusal = "redirected to \(url.absoluteString): \(problem)" }
                handler.value(nil)
                carriedTask.value.cancel()
            } else {
                handler.value(next.value)
            }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let t = transfers.withLock({ $0.removeValue(forKey: ObjectIdentifier(task)) }) else { return }
        let answer: NativeHTTPAnswer
        if let refusal = t.refusal {
            answer = .refused(refusal)
        } else if error != nil || t.status == 0 {
            answer = .failed(URLSessionSteps.failure(error, url: t.url, step: t.timeout).description)
        } else {
            answer = .response(status: t.status, headers: t.headers, body: t.body)
        }
        DispatchQueue.global().async { t.answer(answer) }
    }

    /// What URLSession hands a callback, carried to the thread that answers it.
    private struct Carried<T>: @unchecked Sendable {
        let value: T
        init(_ value: T) { self.value = value }
    }

    private static func overCap(_ t: Transfer) -> String {
        "\(t.url): the response is larger than \(t.policy.maxResponseBytes) bytes, the most the host holds for a library (not read further)"
    }
}

extension NativeHTTPRequest {
    /// Why this request cannot be sent (its method, URL or headers), or nil: the checks the
    /// host's table makes of a library's request, made again where the request came over the
    /// wire from a runner.
    var problem: String? {
        guard !method.isEmpty, method.utf8.count <= 32, method.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            return "method \"\(LibraryOutput.defused(Array(method.utf8.prefix(64))))\" is not an HTTP method"
        }
        if let problem = NativeHTTPRequest.problem(with: url) { return problem }
        guard headers.count <= 1000 else { return "\(headers.count) headers (at most 1000)" }
        for (i, h) in headers.enumerated() {
            guard !h.name.isEmpty, !h.name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x3A || $0 >= 0x7F }) else {
                return "header \(i) has no valid name"
            }
            guard !h.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) else { return "the value of header \(h.name) holds a line break" }
        }
        return nil
    }
}
