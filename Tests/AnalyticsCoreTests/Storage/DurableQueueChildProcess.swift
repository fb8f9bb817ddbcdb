import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A real child process (the `queue-crash-child` executable) with its stdout read line by line
/// against a deadline, so a hung child fails the test instead of hanging it.
final class QueueChildProcess {
    struct Failure: Error, CustomStringConvertible { let description: String }

    let pid: pid_t
    private let output: Int32
    private let input: Int32
    private var pending: [UInt8] = []
    private var reaped = false
    private var inputClosed = false

    /// The helper executable, built by `swift build` next to the test bundle.
    static func executable() throws -> String { try BuiltExecutable.path("queue-crash-child") }

    init(arguments: [String]) throws {
        let path = try Self.executable()
        var outPipe: [Int32] = [0, 0]
        var inPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&inPipe) == 0 else { throw Failure(description: "pipe failed: errno \(errno)") }
        for fd in outPipe + inPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, environ)
        close(outPipe[1])
        close(inPipe[0])
        guard status == 0 else {
            close(outPipe[0])
            close(inPipe[1])
            throw Failure(description: "posix_spawn \(path) failed: \(String(cString: strerror(status)))")
        }
        pid = child
        output = outPipe[0]
        input = inPipe[1]
    }

    deinit {
        if !reaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        close(output)
        if !inputClosed { close(input) }
    }

    /// The next complete line, or nil once the child closed stdout (a torn last line is dropped).
    func readLine(timeout: Double = 60) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "no output from queue-crash-child within \(timeout) s") }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { throw Failure(description: "poll failed: errno \(errno)") }
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = read(output, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "read failed: errno \(errno)")
            }
            if n == 0 { return nil }
            pending += chunk[0..<n]
        }
    }

    /// The complete lines the child wrote before it died. Reads what is in the pipe rather than
    /// waiting for end of file, which a stray inherited descriptor elsewhere could delay.
    func remainingLines() throws -> [String] {
        var lines: [String] = []
        while true {
            while let newline = pending.firstIndex(of: 10) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { return lines }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = read(output, &chunk, chunk.count)
            if n <= 0 { return lines }
            pending += chunk[0..<n]
        }
    }

    /// Closes the child's standard input (modes that wait for end of file then finish).
    func closeInput() { close(input) ; inputClosed = true }

    /// Waits for the child to exit; its wait status.
    func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        return status
    }

    /// SIGKILLs the child and waits for it to be gone (its lock released by the kernel).
    func killAndReap() {
        AnalyticsTestSupport.killAndReap(pid)
        reaped = true
    }
}
