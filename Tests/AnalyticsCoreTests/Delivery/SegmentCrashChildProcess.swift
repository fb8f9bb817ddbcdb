import AnalyticsTestSupport
import AnalyticsCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `segment-crash-child` executable as a real child process: its stdout is read line by line
/// against deadlines (a hung child fails the test instead of hanging it) and it is SIGKILLed.
final class SegmentCrashChildProcess {
    let pid: pid_t
    private let output: Int32
    private let input: Int32
    private var pending: [UInt8] = []
    private var reaped = false
    private(set) var lines: [String] = []

    static func executable() throws -> String { try BuiltExecutable.path("segment-crash-child") }

    /// Starts `segment-crash-child STORAGE API_HOST FIRST COUNT FLUSH_AT [PLUGINS_DIR KEY [SETTINGS]]`.
    init(storage: String, apiHost: String, first: Int, count: Int, flushAt: Int, plugins: (directory: String, key: String)? = nil,
         settings: JSONObject? = nil) throws {
        let path = try Self.executable()
        var out: [Int32] = [0, 0]
        var inp: [Int32] = [0, 0]
        guard pipe(&out) == 0, pipe(&inp) == 0 else { throw SegmentTestFailure("pipe failed: errno \(errno)") }
        for fd in out + inp { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, inp[0], 0)
        let arguments = [path, storage, apiHost, String(first), String(count), String(flushAt)]
            + (plugins.map { [$0.directory, $0.key] } ?? []) + (settings.map { [JSON.object($0).serialized()] } ?? [])
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, environ)
        close(out[1])
        close(inp[0])
        guard status == 0 else {
            close(out[0])
            close(inp[1])
            throw SegmentTestFailure("posix_spawn \(path) failed: \(String(cString: strerror(status)))")
        }
        pid = child
        output = out[0]
        input = inp[1]
    }

    deinit {
        if !reaped { killAndReap() }
        close(output)
        close(input)
    }

    /// Reads lines until `predicate` accepts one (returned) or the deadline passes (throws).
    @discardableResult
    func readUntil(timeout: Double = 60, _ predicate: (String) -> Bool) throws -> String {
        let deadline = monotonicSeconds() + timeout
        while true {
            while let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                lines.append(line)
                if predicate(line) { return line }
            }
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw SegmentTestFailure("segment-crash-child: no matching line within \(timeout) s; last: \(lines.suffix(3))") }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left, 1) * 1000))
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = read(output, &chunk, chunk.count)
            if n <= 0 { throw SegmentTestFailure("segment-crash-child ended; last lines: \(lines.suffix(5))") }
            pending += chunk[0..<n]
        }
    }

    /// Complete lines still in the pipe after the child died.
    func drain() {
        while true {
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { break }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = read(output, &chunk, chunk.count)
            if n <= 0 { break }
            pending += chunk[0..<n]
        }
        while let newline = pending.firstIndex(of: 10) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
    }

    /// The number of events the child announced as stored ("a <n>").
    var accepted: Int { lines.compactMap { $0.hasPrefix("a ") ? Int($0.dropFirst(2)) : nil }.max() ?? 0 }
    /// Errors the child's client reported ("e …").
    var errors: [String] { lines.filter { $0.hasPrefix("e ") } }

    func killAndReap() {
        AnalyticsTestSupport.killAndReap(pid)
        reaped = true
        drain()
    }
}
