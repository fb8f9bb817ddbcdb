import AnalyticsCore
import Foundation
import Glibc
import LoopbackHTTP
import Synchronization

/// `analytics-host receive`: a Segment-compatible collector on 127.0.0.1 that writes what it is
/// sent as NDJSON — to see exactly what a run would upload, without sending it anywhere.
enum ReceiveCommand {
    static let help = """
        usage: analytics-host receive [--port N] [--out FILE] [--write-key KEY] [--max-body BYTES]
                                      [--max-connections N] [--idle-timeout SECONDS] [--quiet]

        Listens on 127.0.0.1 (never another address) for what Segment's tracking API accepts:
        POST /v1/b, /v1/batch and /v1/import ({"batch": [...]}) and the single-call endpoints
        /v1/t /v1/i /v1/s /v1/p /v1/g /v1/a (or /v1/track, /v1/identify, /v1/screen, /v1/page,
        /v1/group, /v1/alias), gzip request bodies included. Every event is written as one line of
        NDJSON with its bytes as received (line breaks between JSON tokens become spaces), with what
        the tracking API adds: the batch's sentAt on each event that has none, and the type of a
        single-call endpoint when the body has none. A request is answered 200 {"success":true}
        only once its events are written, so a client retries anything that was not. A live count
        goes to standard error.

        Point a run at it: analytics-host run --api-host http://127.0.0.1:N/v1 … (or the settings'
        integrations["Segment.io"].apiHost).

          --port N          port on 127.0.0.1 (default 0: a free port, printed at start)
          --out FILE        append the events to FILE (default: standard output)
          --write-key KEY   refuse (401) requests whose Basic auth user, or body writeKey, is not KEY
                            (default: any write key is accepted)
          --max-body BYTES  largest request body, on the wire and inflated (default 4194304: 4 MiB)
          --max-connections N   connections served at once (default 512); more are answered 503
          --idle-timeout SECONDS  a connection silent this long is closed (default 30); a request
                            must arrive whole within twice this (408 past it)
          --quiet           no live count (the start and final lines are still printed)

        Answers (refusals are {"success":false,"code":"…","message":"…"}): 200 taken; 400 not JSON,
        malformed HTTP, no "batch" array, a batch element not an object, a gzip body that does not
        inflate, an event over 32 KB, a batch over 500 KB or 2,500 events, an event nested deeper
        than \(BatchLimits.maxEventDepth) levels; 401 wrong or missing write key (with --write-key);
        404 another path; 405 not POST; 408 a request that did not arrive in time; 413 a body over
        --max-body; 431 headers over 64 KB; 500 the output could not be written; 503 too many
        connections or inflated bodies at once (the client retries 5xx). See docs/receiver.md.

        SIGINT/SIGTERM: stop listening, print the final count, exit 0.

        Exit status: 0 stopped by a signal; 2 usage error, port unavailable or FILE not writable.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        let opts = try Options(arguments, valued: ["--port", "--out", "--write-key", "--max-body", "--max-connections", "--idle-timeout"],
                               flags: ["--quiet"])
        if opts.has("--help") { print(help); return 0 }
        var port: UInt16 = 0
        if let text = opts["--port"] {
            guard let n = UInt16(text) else { throw UsageError("--port needs a port number (0 to 65535), not '\(text)'") }
            port = n
        }
        var limits = HTTPLimits()
        if let text = opts["--max-body"] {
            guard let n = Int(text), n >= 1024 else { throw UsageError("--max-body needs a number of bytes (at least 1024), not '\(text)'") }
            limits.maxBodyBytes = n
        }
        var maxConnections = 512
        if let text = opts["--max-connections"] {
            guard let n = Int(text), n >= 1 else { throw UsageError("--max-connections needs a positive number, not '\(text)'") }
            maxConnections = n
        }
        if let text = opts["--idle-timeout"] {
            guard let t = Double(text), t > 0, t <= 86_400 else { throw UsageError("--idle-timeout needs seconds (above 0), not '\(text)'") }
            limits.idleTimeout = t
            limits.requestTimeout = 2 * t
        }
        let outPath = opts["--out"]
        let out: Int32
        if let outPath {
            out = open(outPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard out >= 0 else { throw UsageError("cannot write --out \(outPath): \(String(cString: strerror(errno)))") }
        } else {
            out = 1
        }
        defer { if out != 1 { close(out) } }

        // Signals are taken synchronously by this thread: block them before any thread starts.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

        let sink = NDJSONSink(fd: out, name: outPath ?? "standard output")
        let collector = SegmentCollector(writeKey: opts["--write-key"])
        let server: LoopbackHTTPServer
        do {
            server = try LoopbackHTTPServer(options: .init(recordBodies: false, recordRequests: false, respond: { request in
                switch collector.take(request) {
                case .failure(let refusal):
                    sink.refused(request.path, refusal)
                    return refusal.response
                case .success(let accepted):
                    if let problem = sink.write(accepted.lines) {
                        return .error(status: 500, code: "server_error", message: problem)
                    }
                    return .json(#"{"success":true}"#)
                }
            }, port: port, limits: limits, maxConnections: maxConnections,
               onRefusal: { status, message in sink.refused(status, message) },
               log: { line in stderr("analytics-host receive: \(TerminalText.escaped(line))\n") }))
        } catch let error as LoopbackHTTPServer.StartError {
            throw UsageError(error.description)
        }
        stderr("analytics-host receive: listening on \(server.baseURL)/v1 (write key: \(opts["--write-key"].map { "'\($0)' required" } ?? "any")), "
               + "writing events to \(outPath ?? "standard output")\n"
               + "analytics-host receive: send to it with: analytics-host run --api-host \(server.baseURL)/v1 …; Ctrl-C stops\n")

        let live = !opts.has("--quiet")
        let terminal = isatty(2) == 1
        var shown = (events: 0, requests: 0, refused: 0)
        var wait = timespec(tv_sec: 0, tv_nsec: 250_000_000)
        while true {
            let signal = sigtimedwait(&stopSignals, nil, &wait)
            if signal == SIGINT || signal == SIGTERM { break }
            let now = sink.counts
            if live && now != shown {
                shown = now
                stderr(terminal ? "\r\(countText(now))   " : "analytics-host receive: \(countText(now))\n")
            }
        }
        server.stop()
        if live && terminal && shown.requests + shown.refused > 0 { stderr("\n") }
        stderr("analytics-host receive: stopped; \(countText(sink.counts)), written to \(outPath ?? "standard output")\n")
        return 0
    }

    static func countText(_ c: (events: Int, requests: Int, refused: Int)) -> String {
        "\(c.events) event\(c.events == 1 ? "" : "s") received in \(c.requests) request\(c.requests == 1 ? "" : "s")"
            + (c.refused > 0 ? ", \(c.refused) refused" : "")
    }

    static func stderr(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}

/// Appends NDJSON lines to a file descriptor, one request's lines in one write, and counts.
final class NDJSONSink: Sendable {
    private let fd: Int32
    private let name: String
    private let state = Mutex((events: 0, requests: 0, refused: 0))

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    var counts: (events: Int, requests: Int, refused: Int) { state.withLock { $0 } }

    /// Writes the lines; the reason when they could not all be written (nothing is counted then).
    func write(_ lines: [[UInt8]]) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines {
            bytes += line
            bytes.append(0x0A)
        }
        return state.withLock { counts -> String? in
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
                if n < 0 {
                    if errno == EINTR { continue }
                    let problem = "cannot write to \(name): \(String(cString: strerror(errno)))"
                    // A partial line would corrupt the file: cut back to where this request began.
                    if written > 0, lseek(fd, 0, SEEK_END) >= 0 { _ = ftruncate(fd, lseek(fd, 0, SEEK_END) - off_t(written)) }
                    FileHandle.standardError.write(Data("analytics-host receive: \(problem); answered 500 (the client retries)\n".utf8))
                    return problem
                }
                written += n
            }
            counts.events += lines.count
            counts.requests += 1
            return nil
        }
    }

    func refused(_ path: String, _ refusal: SegmentCollector.Refusal) {
        refused(status: refusal.status, path: path, refusal.message)
    }

    /// A request the server refused before reading it whole (malformed, too large, too slow…).
    func refused(_ status: Int, _ message: String) {
        state.withLock { $0.refused += 1 }
        FileHandle.standardError.write(Data("analytics-host receive: refused a request: \(status) \(TerminalText.escaped(message))\n".utf8))
    }

    private func refused(status: Int, path: String, _ message: String) {
        state.withLock { $0.refused += 1 }
        FileHandle.standardError.write(Data("analytics-host receive: refused \(TerminalText.escaped(path)): \(status) \(TerminalText.escaped(message))\n".utf8))
    }
}
