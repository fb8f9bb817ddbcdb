import Foundation
import Glibc

/// The pids cgroup of one process-mode library's runners: at most `limit` processes and threads
/// together (the kernel refuses a thread past it with EAGAIN), made next to the host's own pids
/// cgroup (v1 `pids` hierarchy, or v2 where the host's cgroup delegates the pids controller) and
/// joined by each runner before it opens the library. When the library stops, whatever is still
/// in it is killed, so nothing of the library outlives it; then the cgroup is removed. Where the
/// host may not make one there is none (the seccomp filter still refuses new processes).
final class RunnerPidsCgroup: @unchecked Sendable {
    let path: String
    let limit: Int

    private init(path: String, limit: Int) {
        self.path = path
        self.limit = limit
    }

    private static let serial = Locked(0)
    private static let prefix = "analytics-runner-"

    /// This process's pids cgroup directory, or why there is none.
    static let parent: (path: String?, problem: String?) = {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return (nil, "/proc/self/cgroup is unreadable") }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("pids") else { continue }
            let path = "/sys/fs/cgroup/pids" + (fields[2] == "/" ? "" : fields[2])
            return access(path + "/cgroup.procs", W_OK) == 0 ? (path, nil) : (nil, "\(path) is not writable")
        }
        if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) {
            let path = "/sys/fs/cgroup" + (line.dropFirst(3) == "/" ? "" : line.dropFirst(3))
            let controllers = (try? String(contentsOfFile: path + "/cgroup.subtree_control", encoding: .utf8)) ?? ""
            if controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("pids"), access(path, W_OK) == 0 { return (path, nil) }
            return (nil, "the pids controller is not delegated to \(path)")
        }
        return (nil, "no pids cgroup hierarchy is mounted")
    }()

    static func make(limit: Int) -> RunnerPidsCgroup? {
        guard limit > 0, let parentPath = parent.path else { return nil }
        removeStale(in: parentPath)
        let n = serial.withLock { s -> Int in s += 1; return s }
        let path = "\(parentPath)/\(prefix)\(getpid())-\(n)"
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { return nil }
        guard write(String(limit), to: path + "/pids.max") else {
            rmdir(path)
            return nil
        }
        return RunnerPidsCgroup(path: path, limit: limit)
    }

    /// Kills every process still in the cgroup (a runner's, or anything that got in with it).
    func killAll() {
        guard let text = try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8) else { return }
        for line in text.split(separator: "\n") {
            if let pid = pid_t(line), pid > 0 { kill(pid, SIGKILL) }
        }
    }

    /// Kills what is left and removes the cgroup (it goes once the last process is reaped).
    func remove() {
        killAll()
        let deadline = monotonicSeconds() + 2
        while rmdir(path) != 0 && errno == EBUSY && monotonicSeconds() < deadline {
            killAll()
            usleep(1_000)
        }
    }

    /// Removes the cgroups of hosts that are gone (one that was killed could not remove its own),
    /// killing what is left in them first.
    private static func removeStale(in parent: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names where name.hasPrefix(prefix) {
            let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }) ?? 0
            if pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH {
                RunnerPidsCgroup(path: parent + "/" + name, limit: 0).remove()
            }
        }
    }

    private static func write(_ text: String, to file: String) -> Bool {
        let fd = open(file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        return Glibc.write(fd, bytes, bytes.count) == bytes.count
    }
}
