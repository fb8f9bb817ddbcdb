import Foundation
import Glibc

/// How a runner's memory limit (`IsolationConfiguration.memoryLimitBytes`) is enforced.
public enum MemoryLimitMechanism: String, Sendable, Equatable, CaseIterable {
    /// A memory cgroup of its own when the host may make one (memory actually used: resident
    /// pages and page cache; over it the kernel's OOM killer ends the runner), else `addressSpace`.
    case automatic
    /// `RLIMIT_AS`: virtual memory, reservations included. A library that reserves address space
    /// it never touches (JavaScriptCore reserves about 6 GiB at start) needs a limit above that.
    case addressSpace = "address-space"
}

/// The memory cgroup of one process-mode library's runners: made next to the host's own memory
/// cgroup (v1 `memory` hierarchy, or v2 where the host's cgroup delegates the memory controller),
/// joined by each runner before it opens the library, removed when the library stops. Where the
/// host may not make one (no cgroup file system, no permission, controller not delegated), there
/// is none and the runner falls back to `RLIMIT_AS`.
final class RunnerCgroup: @unchecked Sendable {
    let path: String
    let limitBytes: UInt64
    private let version: Int
    private var oomKillsSeen = 0

    private init(path: String, version: Int, limitBytes: UInt64) {
        self.path = path
        self.version = version
        self.limitBytes = limitBytes
        oomKillsSeen = oomKills
    }

    private static let serial = Locked(0)
    private static let prefix = "analytics-runner-"

    /// Where this process's memory cgroup is, and its version; nil (with the reason) when none.
    static let parent: (path: String?, version: Int, problem: String?) = {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else {
            return (nil, 0, "/proc/self/cgroup is unreadable")
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1].split(separator: ",").contains("memory") {
                let path = "/sys/fs/cgroup/memory" + fields[2]
                if access(path + "/memory.limit_in_bytes", W_OK) == 0 { return (path, 1, nil) }
                return (nil, 1, "\(path) is not writable")
            }
        }
        if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) {
            let path = "/sys/fs/cgroup" + line.dropFirst(3)
            let controllers = (try? String(contentsOfFile: path + "/cgroup.subtree_control", encoding: .utf8)) ?? ""
            if controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("memory"), access(path, W_OK) == 0 {
                return (path, 2, nil)
            }
            return (nil, 2, "the memory controller is not delegated to \(path) (cgroup.subtree_control)")
        }
        return (nil, 0, "no memory cgroup hierarchy is mounted")
    }()

    /// Why the host cannot make runner cgroups here, or nil when it can.
    static var unavailableReason: String? { parent.problem }

    /// A new cgroup limited to `limitBytes`, or nil (and the reason) when one cannot be made.
    static func make(limitBytes: UInt64) -> (cgroup: RunnerCgroup?, problem: String?) {
        guard let parentPath = parent.path else { return (nil, parent.problem) }
        removeStale(in: parentPath)
        let n = serial.withLock { s -> Int in s += 1; return s }
        let path = "\(parentPath)/\(prefix)\(getpid())-\(n)"
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            return (nil, "cannot make \(path): \(String(cString: strerror(errno)))")
        }
        let version = parent.version
        let limitFile = version == 1 ? "memory.limit_in_bytes" : "memory.max"
        if let problem = write(String(limitBytes), to: path + "/" + limitFile) {
            rmdir(path)
            return (nil, problem)
        }
        // No escape into swap where there is some (refused where swap accounting is off).
        _ = write(version == 1 ? String(limitBytes) : "0", to: path + (version == 1 ? "/memory.memsw.limit_in_bytes" : "/memory.swap.max"))
        return (RunnerCgroup(path: path, version: version, limitBytes: limitBytes), nil)
    }

    /// Times the kernel's OOM killer ended a process of this cgroup.
    var oomKills: Int {
        let file = version == 1 ? "/memory.oom_control" : "/memory.events"
        guard let text = try? String(contentsOfFile: path + file, encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("oom_kill ") {
            return Int(line.dropFirst("oom_kill ".count)) ?? 0
        }
        return 0
    }

    /// Whether the OOM killer ended a process here since the last time this was asked.
    func consumeOOMKill() -> Bool {
        let now = oomKills
        defer { oomKillsSeen = now }
        return now > oomKillsSeen
    }

    /// Removes the (empty) cgroup; its runner must have been reaped.
    func remove() { rmdir(path) }

    /// Removes the cgroups of hosts that are gone (one that was killed could not remove its own).
    private static func removeStale(in parent: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names where name.hasPrefix(prefix) {
            let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }) ?? 0
            if pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { rmdir(parent + "/" + name) }
        }
    }

    /// Writes `text` to a cgroup control file; the reason when the kernel refuses it.
    private static func write(_ text: String, to file: String) -> String? {
        let fd = open(file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return "cannot open \(file): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        return Glibc.write(fd, bytes, bytes.count) == bytes.count ? nil : "cannot write \(file): \(String(cString: strerror(errno)))"
    }
}
