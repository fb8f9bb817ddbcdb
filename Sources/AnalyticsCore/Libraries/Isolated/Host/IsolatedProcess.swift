import CProcessControl
import Foundation
import Glibc

/// One `analytics-plugin-runner` child: spawned in a session of its own (no controlling terminal)
/// with a cleaned environment, the library and its grants handed open (`RunnerFiles`, fd 6 on),
/// its protocol on a socket pair (fd 3 and fd 4 of the child are the same socket; the host's end is close-on-exec and written with MSG_NOSIGNAL, so a dead child is
/// an error to handle, never a SIGPIPE), standard input on /dev/null and standard output and
/// error on a pipe the host reads, each line prefixed with the library (`RunnerOutput`): a library
/// cannot print lines that pass for the host's. Reaped by its own pid only.
final class IsolatedProcess: @unchecked Sendable {
    let pid: pid_t
    /// The host's end of the socket pair.
    let fd: Int32
    private let reaped = Locked<Int32?>(nil)
    private let closed = Locked(false)
    /// Frames come from several threads (batches, replies, plugin calls): one at a time, whole.
    private let sending = NSLock()
    /// Signalled when every line the runner printed was forwarded (its output's end of file).
    private let outputEnded: DispatchSemaphore

    private init(pid: pid_t, fd: Int32, outputEnded: DispatchSemaphore) {
        self.pid = pid
        self.fd = fd
        self.outputEnded = outputEnded
    }

    struct SpawnError: Error, CustomStringConvertible { let description: String }

    /// The host is not dumpable once it runs libraries in runners: a runner of the same user could
    /// otherwise open /proc/<host>/mem, environ or fd (the kernel lets a process of the same user
    /// do so when it is dumpable).
    private static let hostNotDumpable: Bool = ah_process_set_not_dumpable() == 0

    /// Environment variables a runner keeps; everything else (keys, tokens, proxies) stays with
    /// the host.
    static func keepsVariable(_ name: Substring) -> Bool {
        ["PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH"].contains(name) || name.hasPrefix("LC_")
            || name.hasSuffix("SAN_OPTIONS")
    }

    /// `label` names the library in the lines the runner prints (its key, or its file while scanning);
    /// `files` are the library and the grants, handed open from `PluginRunner.libraryFd` on.
    static func spawn(runner: String, arguments: [String], label: String, files: RunnerFiles,
                      progress: ProgressPage? = nil) throws(SpawnError) -> IsolatedProcess {
        _ = hostNotDumpable
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw SpawnError(description: "socketpair failed: \(String(cString: strerror(errno)))")
        }
        // The child's end must not be 0...4 itself, or dup2 onto 3/4 would not clear close-on-exec.
        var childEnd = pair[1]
        if childEnd <= 4 {
            childEnd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10)
            close(pair[1])
        }
        var output: [Int32] = [-1, -1]
        // A socket pair as the pipe: made close-on-exec at once (another thread's spawn must not inherit it).
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &output) == 0 else {
            close(pair[0]); close(childEnd)
            throw SpawnError(description: "socketpair for its output failed: \(String(cString: strerror(errno)))")
        }
        // As for the socket: never 0...5 itself, or dup2 onto 1/2 would not clear close-on-exec.
        if output[1] <= 5 {
            let high = fcntl(output[1], F_DUPFD_CLOEXEC, 10)
            close(output[1])
            output[1] = high
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, output[1], 2)
        posix_spawn_file_actions_adddup2(&actions, childEnd, PluginRunner.commandsFd)
        posix_spawn_file_actions_adddup2(&actions, childEnd, PluginRunner.resultsFd)
        if let progress { posix_spawn_file_actions_adddup2(&actions, progress.fd, ProgressPage.runnerFd) }
        for (index, fd) in files.descriptors.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, fd, PluginRunner.libraryFd + Int32(index))
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // A session (and process group) of its own: no controlling terminal to type into
        // (TIOCSTI) or to signal, and the terminal's Ctrl-C, Ctrl-Z and a `kill -- -PGID` reach the
        // host, which stops its runners in order (flush, destroy) instead of losing what a library
        // still held in memory to a SIGINT that killed its runner first.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | IsolatedProcess.setsid))

        let argv = ([runner] + arguments + files.arguments + ["--parent", String(getpid())]).map { strdup($0) }
        defer { for p in argv { free(p) } }
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv + [nil]
        // The Swift runtime's crash backtracer would spend a second per crash of a library.
        var environment: [UnsafeMutablePointer<CChar>?] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "="), keepsVariable(text[..<equals]) { environment.append(strdup(entry)) }
            index += 1
        }
        environment.append(strdup("SWIFT_BACKTRACE=enable=no"))
        defer { for p in environment { free(p) } }
        environment.append(nil)
        var pid: pid_t = 0
        let status = posix_spawn(&pid, runner, &actions, &attributes, &cArgs, &environment)
        close(childEnd)
        close(output[1])
        guard status == 0 else {
            close(pair[0])
            close(output[0])
            throw SpawnError(description: "cannot start \(runner): \(String(cString: strerror(status)))")
        }
        let outputEnded = RunnerOutput.forward(output[0], label: label)
        return IsolatedProcess(pid: pid, fd: pair[0], outputEnded: outputEnded)
    }

    /// Sends bytes; false when the child is gone or did not take them by `deadline`.
    func send(_ bytes: [UInt8], deadline: Double) -> Bool {
        sending.lock()
        defer { sending.unlock() }
        return bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                if n >= 0 { offset += n; continue }
                if errno == EINTR { continue }
                guard errno == EAGAIN else { return false }
                let left = deadline - monotonicSeconds()
                if left <= 0 { return false }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, Int32(min(left * 1000 + 1, 1000)))
            }
            return true
        }
    }

    /// Whether a frame can be read before `deadline` (monotonic seconds; nil: wait for ever).
    func readable(until deadline: Double?) -> Bool {
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let timeout: Int32 = deadline.map { Int32(max(0, min(($0 - monotonicSeconds()) * 1000 + 1, 60_000))) } ?? -1
            let r = poll(&p, 1, timeout)
            if r > 0 { return true }
            if r < 0 && errno == EINTR { continue }
            if let deadline, monotonicSeconds() >= deadline { return false }
        }
    }

    /// The next frame (blocking); nil once the child closed its end or sent garbage.
    func readFrame() -> (IsolationWire.Kind, [UInt8])? { WireIO.readFrame(fd) }

    func kill() { _ = Glibc.kill(pid, SIGKILL) }

    /// glibc's POSIX_SPAWN_SETSID (not imported by Swift's Glibc module).
    private static let setsid: Int32 = 0x80

    /// Waits for the child to end and returns its wait status (once; later calls return the same).
    /// Its last lines are forwarded first (and the count of those its rate suppressed said), so
    /// they come before what the host reports about its end, and a host that exits right after
    /// does not lose them: a second at most, since its output ends with the process.
    @discardableResult
    func wait() -> Int32 {
        if let status = reaped.withLock({ $0 }) { return status }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if outputEnded.wait(timeout: .now() + 1) == .success { outputEnded.signal() }
        reaped.withLock { $0 = status }
        return status
    }

    /// Closes the host's end (the child reads end of file and exits).
    func closeChannel() {
        let first = closed.withLock { c -> Bool in defer { c = true }; return !c }
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        if !closed.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
        close(fd)
    }

    /// "was killed by signal 11 (SIGSEGV)" / "exited with status 7".
    static func describe(status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exited with status \((status >> 8) & 0xff)" }
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL", SIGBUS: "SIGBUS",
                                      SIGFPE: "SIGFPE", SIGILL: "SIGILL", SIGTERM: "SIGTERM", SIGXCPU: "SIGXCPU"]
        return "was killed by signal \(signal) (\(names[signal] ?? String(cString: strsignal(signal))))"
    }
}

/// Where `analytics-plugin-runner` is: next to the running executable, else
/// `Configuration.pluginRunnerPath`, else the environment's ANALYTICS_PLUGIN_RUNNER.
package enum PluginRunnerLocator {
    package static let executableName = "analytics-plugin-runner"

    package static func find(configured: String? = nil) -> String? {
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent + "/" + executableName)
        }
        if let configured { candidates.append(configured) }
        if let env = ProcessInfo.processInfo.environment["ANALYTICS_PLUGIN_RUNNER"], !env.isEmpty { candidates.append(env) }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
