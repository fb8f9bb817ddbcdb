import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Glibc

// `analytics-host run` as users run it: a file of many users' events, interleaved, read by the
// release binary in a child process, to `analytics-host receive` (Segment.io) or to the vendor
// libraries' loopback fakes. The figure that matters is the child's CPU time per line (every
// thread, from wait4's rusage: reading, parsing, checks, queue, gzip, upload), against the floor
// of building one event's JSON line in this process.

/// A deterministic input of `lines` events from `users` users, interleaved (consecutive lines
/// rarely share a user): 70 % track (4 event names, 5–7 properties), 20 % identify (traits),
/// 10 % screen, each with its messageId, userId, anonymousId, timestamp and a small context.
enum ManyUserInput {
    static func write(to path: String, lines: Int, users: Int = 1_000) {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20 + 4096)
        for i in 0..<lines {
            JSON.object(event(i, users: users)).write(to: &chunk)
            chunk.append(0x0A)
            if chunk.count >= 1 << 20 {
                handle.write(Data(chunk))
                chunk.removeAll(keepingCapacity: true)
            }
        }
        handle.write(Data(chunk))
    }

    /// Line `i` of the input, as a value (the floor row serializes exactly these).
    static func event(_ i: Int, users: Int = 1_000) -> JSONObject {
        // A multiplicative step through the users: line i and i+1 belong to different users.
        let user = (i &* 7_919) % users
        let kind = i % 10
        let second = i / 1_000
        var e: JSONObject = [
            "messageId": .string("run-\(i)"),
            "userId": .string("user-\(user)"),
            "anonymousId": .string("anon-\(user)-3f9c2a"),
            "timestamp": .string(String(format: "2026-11-28T%02d:%02d:%02d.%03dZ", (second / 3600) % 24, (second / 60) % 60, second % 60, i % 1000)),
            "context": ["ip": .string("203.0.113.\(user % 250)"), "locale": "en-US",
                        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"],
        ]
        switch kind {
        case 0, 1:
            e["type"] = "identify"
            e["traits"] = ["email": .string("user-\(user)@example.com"), "name": .string("User \(user)"),
                           "plan": user % 3 == 0 ? "pro" : "free", "logins": .number(JSONNumber(i % 97))]
        case 2:
            e["type"] = "screen"
            e["name"] = user % 2 == 0 ? "Home" : "Product Detail"
            e["properties"] = ["category": "Shoes", "referrer": "search"]
        default:
            e["type"] = "track"
            let names = ["Product Viewed", "Product Added", "Checkout Started", "Order Completed"]
            e["event"] = .string(names[i % names.count])
            e["properties"] = ["product_id": .string("p-\(i % 5_000)"), "name": "Café ☕ mug", "price": 19.99,
                               "currency": "EUR", "quantity": .number(JSONNumber(1 + i % 3)),
                               "revenue": .number(JSONNumber(Double(1 + i % 3) * 19.99)), "n": .number(JSONNumber(i))]
            // A checkout and an order carry their products, an order its id (GA4 refuses either
            // without products, a purchase without an order id).
            if i % names.count >= 2 {
                e["properties"]?["products"] = [["product_id": .string("p-\(i % 5_000)"), "name": "Café ☕ mug", "price": 19.99,
                                                 "quantity": .number(JSONNumber(1 + i % 3))]]
            }
            if i % names.count == 3 { e["properties"]?["order_id"] = .string("o-\(i)") }
        }
        return e
    }
}

/// What one `analytics-host run` child did: lines/s from spawn to exit, its CPU per line (every
/// thread), peak RSS, exit status, and each destination's summary row.
struct RunPathResult {
    var lines: Int
    var seconds: Double
    var cpuSeconds: Double
    var userSeconds: Double
    var systemSeconds: Double
    var peakRSSMiB: Double
    var status: Int32
    /// destination → (offered, delivered, skipped), from the run's summary table.
    var summary: [String: (offered: Int, delivered: Int, skipped: Int)]
    var problem: String?

    var linesPerSecond: Double { Double(lines) / seconds }
    var cpuMicrosecondsPerLine: Double { cpuSeconds * 1e6 / Double(lines) }

    /// "lines/s (CPU µs/line: user+sys, peak RSS)" or the failure.
    var text: String {
        if let problem { return "failed: \(problem)" }
        return String(format: "%@ (%.2f µs: %.2f+%.2f, %.0f MiB)", formatRate(linesPerSecond), cpuMicrosecondsPerLine,
                      userSeconds * 1e6 / Double(lines), systemSeconds * 1e6 / Double(lines), peakRSSMiB)
    }
}

/// A child process started with posix_spawn and reaped with wait4, so its own rusage (all its
/// threads) is read exactly; Foundation's Process does not give it.
struct SpawnedChild {
    let pid: pid_t

    /// Starts `path` with `arguments`; standard output and error go to the files given (created).
    init?(_ path: String, _ arguments: [String], stdout: String, stderr: String) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { return nil }
        self.pid = pid
    }

    /// Waits for the exit: status (128+signal when killed), the child's rusage, and its peak RSS
    /// in MiB. Not rusage's `ru_maxrss`: Linux records there the RSS of the memory the child was
    /// spawned from (this process's, hundreds of MiB by the time the run rows come) when it
    /// execs. The child's own high-water mark (`VmHWM`) is read while it runs, every 10 ms, the
    /// last reading before it exits kept (it only grows).
    func wait() -> (status: Int32, usage: rusage, peakRSSMiB: Double) {
        var status: Int32 = 0
        var usage = rusage()
        var peakKiB = 0
        while true {
            let reaped = wait4(pid, &status, WNOHANG, &usage)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { break }
            peakKiB = max(peakKiB, Self.highWaterKiB(of: pid) ?? 0)
            usleep(10_000)
        }
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), usage, Double(peakKiB) / 1024)
    }

    /// `VmHWM` of a running process, in KiB.
    static func highWaterKiB(of pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
    }

    func signal(_ s: Int32) { kill(pid, s) }
}

private func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }

/// The release binaries next to this one.
private func releaseBinary(_ name: String) -> String? {
    let path = (CommandLine.arguments[0] as NSString).deletingLastPathComponent + "/" + name
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
}

/// Runs `analytics-host run` on `input` (`lines` lines) with `settings`, plugins from `plugins`.
func runPathBenchmark(input: String, lines: Int, settings: JSONObject, plugins: String, extra: [String] = []) -> RunPathResult {
    var result = RunPathResult(lines: lines, seconds: 1, cpuSeconds: 0, userSeconds: 0, systemSeconds: 0, peakRSSMiB: 0, status: -1, summary: [:])
    guard let host = releaseBinary("analytics-host") else {
        result.problem = "analytics-host missing next to analytics-bench (make bench builds it)"
        return result
    }
    let dir = NSTemporaryDirectory() + "analytics-bench-run-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let settingsPath = dir + "/settings.json"
    try? JSON.object(settings).serialized().write(toFile: settingsPath, atomically: true, encoding: .utf8)
    let start = monotonicSeconds()
    guard let child = SpawnedChild(host, ["run", "--settings", settingsPath, "--plugins", plugins, "--storage", dir + "/storage",
                                          "--input", input, "--quiet", "--drain-timeout", "600"] + extra,
                                   stdout: dir + "/out", stderr: dir + "/err") else {
        result.problem = "cannot start \(host)"
        return result
    }
    let (status, usage, peak) = child.wait()
    result.seconds = monotonicSeconds() - start
    result.userSeconds = seconds(usage.ru_utime)
    result.systemSeconds = seconds(usage.ru_stime)
    result.cpuSeconds = result.userSeconds + result.systemSeconds
    result.peakRSSMiB = peak
    result.status = status
    let out = (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? ""
    // The summary's rows: "KEY  offered  delivered  dropped  skipped  failed  queued  abandoned".
    var inTable = false
    for line in out.split(separator: "\n") {
        let cells = line.split(separator: "  ", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        if cells.first == "destination" { inTable = true; continue }
        guard inTable else { continue }
        guard cells.count >= 8, let offered = Int(cells[1]), let delivered = Int(cells[2]), let skipped = Int(cells[4]) else { break }
        result.summary[cells[0]] = (offered, delivered, skipped)
    }
    if status != 0 {
        let err = ((try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? "").split(separator: "\n").first.map(String.init) ?? ""
        result.problem = "exit \(status): \(err)"
    }
    return result
}

/// `analytics-host receive` as a child on a free port, writing what it takes to /dev/null.
final class ReceiveChild {
    let child: SpawnedChild
    let baseURL: String
    private let dir: String

    init?() {
        guard let host = releaseBinary("analytics-host") else { return nil }
        dir = NSTemporaryDirectory() + "analytics-bench-receive-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let child = SpawnedChild(host, ["receive", "--out", "/dev/null", "--quiet"], stdout: dir + "/out", stderr: dir + "/err") else {
            return nil
        }
        self.child = child
        var url: String?
        let deadline = monotonicSeconds() + 10
        while url == nil, monotonicSeconds() < deadline {
            let err = (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? ""
            if let range = err.range(of: #"listening on (http://[^ ]+/v1)"#, options: .regularExpression) {
                url = String(err[range].dropFirst("listening on ".count))
            } else {
                usleep(10_000)
            }
        }
        guard let url else {
            child.signal(SIGKILL)
            _ = child.wait()
            return nil
        }
        baseURL = url
    }

    /// Stops it (SIGTERM): the events it took, and its CPU seconds.
    func stop() -> (events: Int, cpuSeconds: Double) {
        child.signal(SIGTERM)
        let (_, usage, _) = child.wait()
        let err = (try? String(contentsOfFile: dir + "/err", encoding: .utf8)) ?? ""
        var events = -1
        if let range = err.range(of: #"stopped; [0-9]+ event"#, options: .regularExpression) {
            events = Int(err[range].dropFirst("stopped; ".count).prefix { $0.isNumber }) ?? -1
        }
        try? FileManager.default.removeItem(atPath: dir)
        return (events, seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
}

/// An ordinary HTTP server as a Segment.io sink: Python's `http.server` (HTTP/1.0 unless told
/// otherwise: a connection per request, as simple sinks are), which inflates and counts each batch.
final class PythonSink {
    let child: SpawnedChild
    let baseURL: String
    private let dir: String

    static let script = """
        import gzip, http.server, json, signal, sys
        count = 0
        class Sink(http.server.BaseHTTPRequestHandler):
            protocol_version = sys.argv[1]
            def do_POST(self):
                global count
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                count += len(json.loads(body)["batch"])
                answer = b'{"success":true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Sink)
        def stop(*args):
            print("received", count, flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
        print("listening on http://127.0.0.1:%d/v1" % server.server_address[1], flush=True)
        server.serve_forever()
        """

    init?(protocolVersion: String = "HTTP/1.0") {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
        dir = NSTemporaryDirectory() + "analytics-bench-pysink-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let child = SpawnedChild("/usr/bin/python3", ["-c", Self.script, protocolVersion], stdout: dir + "/out", stderr: dir + "/err") else {
            return nil
        }
        self.child = child
        var url: String?
        let deadline = monotonicSeconds() + 10
        while url == nil, monotonicSeconds() < deadline {
            let out = (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? ""
            if let range = out.range(of: #"listening on (http://[^ ]+/v1)"#, options: .regularExpression) {
                url = String(out[range].dropFirst("listening on ".count))
            } else {
                usleep(10_000)
            }
        }
        guard let url else {
            child.signal(SIGKILL)
            _ = child.wait()
            return nil
        }
        baseURL = url
    }

    /// Stops it: the events it counted, and its CPU seconds.
    func stop() -> (events: Int, cpuSeconds: Double) {
        child.signal(SIGTERM)
        let (_, usage, _) = child.wait()
        let out = (try? String(contentsOfFile: dir + "/out", encoding: .utf8)) ?? ""
        var events = -1
        if let range = out.range(of: #"received [0-9]+"#, options: .regularExpression) {
            events = Int(out[range].dropFirst("received ".count)) ?? -1
        }
        try? FileManager.default.removeItem(atPath: dir)
        return (events, seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
}

/// The floor: CPU µs (this thread) to write one event of the input as its JSON line, from the
/// value (1,000 distinct events of the input's mix, built beforehand), best of three passes.
func runFloorMicroseconds(lines: Int) -> Double {
    let events = (0..<1_000).map { JSON.object(ManyUserInput.event($0)) }
    var best = Double.infinity
    var line: [UInt8] = []
    line.reserveCapacity(1 << 12)
    var sink = 0
    for _ in 0..<3 {
        let start = threadCPUSeconds()
        for i in 0..<lines {
            line.removeAll(keepingCapacity: true)
            events[i % events.count].write(to: &line)
            line.append(0x0A)
            sink &+= line.count
        }
        best = min(best, (threadCPUSeconds() - start) * 1e6 / Double(lines))
    }
    benchCheck(sink > 0)
    return best
}

func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// The rows: the floor, `run` → receive over `lines` lines, and `run` → each vendor library's fake
/// (and all four at once) over `vendorLines` lines, all from the same many-user input.
@MainActor func addRunPathRows(lines: Int = 1_000_000, vendorLines: Int = 20_000, only: String? = nil) {
    let dir = NSTemporaryDirectory() + "analytics-bench-runpath-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let floor = runFloorMicroseconds(lines: 100_000)
    table.add("floor: write one event's JSON line from its value (the input's mix): CPU µs/line", String(format: "%.2f", floor))
    func ratio(_ r: RunPathResult) -> String { r.problem == nil ? String(format: " = %.0f× floor", r.cpuMicrosecondsPerLine / floor) : "" }

    if only == nil || only == "receive" {
        let input = dir + "/input.ndjson"
        ManyUserInput.write(to: input, lines: lines)
        if let receiver = ReceiveChild() {
            let r = runPathBenchmark(input: input, lines: lines,
                                     settings: ["integrations": ["Segment.io": ["apiKey": "bench", "apiHost": .string(receiver.baseURL)]]],
                                     plugins: dir + "/empty")
            let received = receiver.stop()
            var text = r.text + ratio(r)
            if r.problem == nil {
                text += String(format: "; receive %.2f µs/line", received.cpuSeconds * 1e6 / Double(lines))
                if received.events != lines { text += "; LOST: \(lines - received.events) not received" }
            }
            table.add("run → receive (Segment.io), \(formatRate(Double(lines))) lines, 1,000 users: lines/s (CPU µs/line: user+sys, peak RSS)",
                      text, target: "≥ 250,000; ≤ 6× floor; ≤ 30 MiB")
        } else {
            table.add("run → receive", "skipped: analytics-host receive did not start (make bench builds it)")
        }
        try? FileManager.default.removeItem(atPath: input)
    }
    if only == nil || only == "python" {
        let input = dir + "/input.ndjson"
        let n = min(lines, 200_000)
        ManyUserInput.write(to: input, lines: n)
        if let sink = PythonSink() {
            let r = runPathBenchmark(input: input, lines: n,
                                     settings: ["integrations": ["Segment.io": ["apiKey": "bench", "apiHost": .string(sink.baseURL)]]],
                                     plugins: dir + "/empty")
            let received = sink.stop()
            var text = r.text
            if r.problem == nil && received.events != n { text += "; LOST: \(n - received.events) not received" }
            table.add("run → python3 http.server (HTTP/1.0), \(formatRate(Double(n))) lines: lines/s (CPU µs/line: user+sys, peak RSS)", text)
        } else {
            table.add("run → python3 http.server", "skipped: no python3")
        }
        try? FileManager.default.removeItem(atPath: input)
    }
    // "vendor:KEY" runs that vendor's row alone.
    let onlyVendor = only.flatMap { $0.hasPrefix("vendor:") ? String($0.dropFirst("vendor:".count)) : nil }
    guard only == nil || only == "vendors" || onlyVendor != nil else { return }
    let input = dir + "/vendor-input.ndjson"
    ManyUserInput.write(to: input, lines: vendorLines)
    let libraries = dir + "/libraries"
    try? FileManager.default.createDirectory(atPath: libraries, withIntermediateDirectories: true)
    let (vendors, skipped) = benchVendors(libraries: libraries)
    func plugins(_ chosen: [BenchVendor]) -> String {
        let p = dir + "/plugins-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        for v in chosen { try? FileManager.default.copyItem(atPath: v.library, toPath: p + "/" + (v.library as NSString).lastPathComponent) }
        return p
    }
    func row(_ chosen: [BenchVendor], _ label: String) {
        let p = plugins(chosen)
        defer { try? FileManager.default.removeItem(atPath: p) }
        var integrations: JSONObject = [:]
        for v in chosen { integrations[v.key] = v.settings }
        let before = chosen.map { $0.requests() }
        let r = runPathBenchmark(input: input, lines: vendorLines, settings: ["integrations": .object(integrations)], plugins: p)
        var text = r.text + ratio(r)
        if r.problem == nil {
            let requests = zip(chosen, before).map { v, b in "\(v.key) \(v.requests() - b)" }
            text += "; requests: " + requests.joined(separator: ", ")
        }
        if r.problem == nil {
            // Nothing lost: every destination delivered or skipped what it was offered (the summary).
            let short = chosen.compactMap { v -> String? in
                guard let s = r.summary[v.key] else { return "\(v.key): no summary row" }
                return s.delivered + s.skipped < s.offered ? "\(v.key) \(s.delivered)+\(s.skipped) skipped of \(s.offered)" : nil
            }
            if !short.isEmpty { text += "; NOT DELIVERED: " + short.joined(separator: ", ") }
        }
        table.add("run → \(label), \(formatRate(Double(vendorLines))) lines, 1,000 users: lines/s (CPU µs/line: user+sys, peak RSS)", text)
    }
    for v in vendors where onlyVendor == nil || onlyVendor == v.key { row([v], "\(v.key) library (its loopback fake)") }
    if vendors.count > 1, onlyVendor == nil { row(vendors, "all \(vendors.count) vendor libraries at once") }
    for s in skipped { table.add("run → vendor library: \(s)", "skipped") }
    withExtendedLifetime(vendors.map(\.keepAlive)) {}
}
