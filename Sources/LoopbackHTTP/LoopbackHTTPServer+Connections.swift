import AnalyticsCore
import Foundation
import Glibc

/// Accepting and serving connections, within the server's limits.
extension LoopbackHTTPServer {
    func threadEnded() {
        condition.lock()
        liveThreads -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Counts a refusal the server made itself and tells the owner.
    func refused(_ status: Int, _ message: String) {
        condition.lock()
        refusedTotal += 1
        condition.unlock()
        options.onRefusal?(status, message)
    }

    /// Accepts until the server stops. Running out of descriptors, buffers or memory (EMFILE,
    /// ENFILE, ENOBUFS, ENOMEM) does not end the loop: it backs off (10 ms doubling to 1 s) and
    /// tries again — the connection waits in the listen backlog meanwhile — and says so once a
    /// minute at most (a receiver at its descriptor limit flips between failing and working with
    /// every connection that closes), and once more when accepting works again.
    func acceptLoop() {
        defer { threadEnded() }
        var backoff = 0.0
        var failures = 0
        var lastLogged = -Double.infinity
        var episodeLogged = false
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                let e = errno
                if e == EINTR || e == ECONNABORTED || e == EPROTO { continue }
                condition.lock()
                let isStopped = stopped
                condition.unlock()
                if isStopped { return }
                guard e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM else {
                    options.log?("accept() failed: \(String(cString: strerror(e))); no longer accepting connections")
                    return
                }
                failures += 1
                if failures == 1, Self.monotonicNow() - lastLogged >= 60 {
                    lastLogged = Self.monotonicNow()
                    episodeLogged = true
                    options.log?("accept() failed: \(String(cString: strerror(e))); backing off and retrying "
                                 + "(connections wait in the backlog; logged once a minute at most)")
                }
                backoff = min(1, max(0.01, backoff * 2))
                condition.lock()
                if !stopped { _ = condition.wait(until: Date(timeIntervalSinceNow: backoff)) }
                condition.unlock()
                continue
            }
            if failures > 0 {
                if episodeLogged {
                    options.log?("accept() works again after \(failures) failed attempt\(failures == 1 ? "" : "s")")
                }
                failures = 0
                episodeLogged = false
            }
            backoff = 0
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // child processes started by tests must not inherit it
            condition.lock()
            if stopped {
                condition.unlock()
                close(fd)
                return
            }
            if openConnections.count >= options.maxConnections {
                condition.unlock()
                refuseAtOnce(fd)
                continue
            }
            openConnections.insert(fd)
            connectionsAccepted += 1
            liveThreads += 1
            condition.unlock()
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            // A peer that never reads cannot hold a send for longer than the idle timeout.
            var timeout = timeval(tv_sec: Int(options.limits.idleTimeout), tv_usec: Int((options.limits.idleTimeout.truncatingRemainder(dividingBy: 1)) * 1e6))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            Thread.detachNewThread { [self] in serve(fd) }
        }
    }

    /// Over the connection cap: 503 without reading anything (never blocking the accept loop on
    /// the peer), then close.
    private func refuseAtOnce(_ fd: Int32) {
        let message = "too many connections (limit \(options.maxConnections)); retry later"
        let bytes = HTTPResponseWriter.bytes(status: 503, headers: [("Content-Type", "application/json"), ("Retry-After", "1")],
                                             body: Array(ScriptedResponse.errorBody(code: "server_busy", message: message).utf8),
                                             keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        close(fd)
        refused(503, message)
    }

    // MARK: Connection

    /// Serves one connection on the calling thread, as a connection thread does, and closes it
    /// (the fuzz target drives the whole request path through this, over a socket pair).
    func serveOnThisThread(_ fd: Int32) {
        condition.lock()
        openConnections.insert(fd)
        liveThreads += 1
        condition.unlock()
        serve(fd)
    }

    func serve(_ fd: Int32) {
        defer {
            condition.lock()
            openConnections.remove(fd)
            condition.unlock()
            close(fd)
            threadEnded()
        }
        var reader = HTTPRequestReader(fd: fd, limits: options.limits)
        while true {
            let parsed: ParsedHTTPRequest
            switch reader.read() {
            case .success(let request): parsed = request
            case .failure(let end):
                if case .refused(let status, let code, let message) = end.end {
                    refused(status, message)
                    _ = sendAll(fd, HTTPResponseWriter.bytes(status: status, headers: [("Content-Type", "application/json")],
                                                             body: Array(ScriptedResponse.errorBody(code: code, message: message).utf8),
                                                             keepAlive: false))
                    lingeringClose(fd)
                }
                return
            }
            let (response, reserved) = record(parsed)
            defer { if reserved > 0 { inflateBudget.release(reserved) } }
            switch response {
            case .close:
                return
            case .hang:
                condition.lock()
                while !stopped { condition.wait() }
                condition.unlock()
                return
            case .respond(let status, let headers, let body):
                var keepAlive = !parsed.wantsClose
                for (name, value) in headers where name.lowercased() == "connection" && value.lowercased() == "close" {
                    keepAlive = false
                }
                guard sendAll(fd, HTTPResponseWriter.bytes(status: status, headers: headers, body: body, keepAlive: keepAlive)),
                      keepAlive else { return }
            }
        }
    }

    /// After a refusal: stop sending, and read what the peer still sends for a moment, so that it
    /// reads the answer instead of a reset (a client still writing a refused body gets RST if the
    /// socket closes with unread data). Bounded: one second at most.
    private func lingeringClose(_ fd: Int32) {
        Glibc.shutdown(fd, Int32(SHUT_WR))
        let deadline = monotonicSeconds() + 1
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { return }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(left * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return }
            let n = sink.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
        }
    }

    /// Records the request and picks its response; the bytes of the inflate budget it holds
    /// (released once the answer is sent).
    private func record(_ parsed: ParsedHTTPRequest) -> (ScriptedResponse, reserved: Int) {
        var request = RecordedRequest(method: parsed.method, path: parsed.path, headers: parsed.headers,
                                      body: [], wireBodySize: parsed.body.count, decodeError: nil)
        var reserved = 0
        let wantsBody = options.recordBodies || options.onRequest != nil || options.respond != nil
        if wantsBody {
            if request.header("Content-Encoding")?.lowercased() == "gzip" {
                let limit = options.limits.maxBodyBytes
                guard inflateBudget.reserve(limit + 1, timeout: options.inflateBudgetWait) else {
                    let message = "busy inflating other requests (budget \(inflateBudget.total) bytes); retry later"
                    refused(503, message)
                    return (.error(status: 503, code: "server_busy", message: message, headers: [("Retry-After", "1")]), 0)
                }
                reserved = limit + 1
                do {
                    request.body = try Gzip.decompress(parsed.body, limit: limit)
                } catch {
                    if error.isOverLimit {
                        let message = "gzip body inflates to more than the limit of \(limit) bytes"
                        refused(413, message)
                        return (.error(status: 413, code: "payload_too_large", message: message), reserved)
                    }
                    request.decodeError = error.description
                }
            } else {
                request.body = parsed.body
            }
        }
        options.onRequest?(request)
        let answer = options.respond?(request)
        condition.lock()
        defer { condition.unlock() }
        requestTotal += 1
        wireBytesTotal += parsed.body.count
        if options.recordRequests {
            if !options.recordBodies { request.body = [] }
            recorded.append(request)
        }
        condition.broadcast()
        if let answer { return (answer, reserved) }
        if let i = script.firstIndex(where: { $0.path == nil || $0.path == parsed.path }) {
            return (script.remove(at: i).response, reserved)
        }
        return (fallback, reserved)
    }
}

extension LoopbackHTTPServer {
    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
