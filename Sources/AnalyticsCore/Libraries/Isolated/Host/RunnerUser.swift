import Foundation
import Glibc

/// Who a runner runs as. A runner of an ordinary host keeps the host's uid (the jail confines
/// it). A runner of a host that runs as root becomes `uid`/`gid` (default 65534, `nobody` /
/// `nogroup`) with no supplementary groups, before it opens the library: capabilities dropped
/// alone leave uid 0, which still owns root's files (writes plugin directories and binaries,
/// reads what only the owner may). A user namespace would not do: the kernel checks files against
/// the uid outside it.
///
/// The library and the granted paths are handed to the runner open (`RunnerFiles`): no directory
/// above them need let this user pass. The library file itself must still be readable by it (the
/// runner reopens it through /proc/self/fd: `problem(readingFile:)`), and a granted path is used
/// by its name, so the host checks those by their mode bits (`problem(reaching:write:)`) and names
/// what is out of reach. The runner's own directory the host makes this user's.
public struct RunnerUser: Sendable, Equatable {
    public var uid: UInt32
    public var gid: UInt32

    public init(uid: UInt32, gid: UInt32) {
        self.uid = uid
        self.gid = gid
    }

    public static let nobody = RunnerUser(uid: 65534, gid: 65534)

    /// Whether runners change user: the host runs as root.
    static var applies: Bool { geteuid() == 0 }

    /// The runner's arguments: the user to become, when the host is root.
    var arguments: [String] { Self.applies ? ["--uid", String(uid), "--gid", String(gid)] : [] }

    /// "uid 65534, gid 65534 …" for `plugins` and the docs.
    public var summary: String {
        if Self.applies { return "uid \(uid), gid \(gid), no supplementary groups (the host runs as root)" }
        return "the host's uid \(getuid()) (the host is not root)"
    }

    /// Makes `directory` (the runner's own) the runner user's, when the host is root.
    func own(_ directory: String) {
        guard Self.applies else { return }
        _ = chown(directory, uid, gid)
    }

    /// Why `path` is out of this user's reach by its mode bits (`write`: to write beneath it),
    /// nil when it is in reach, missing, or runners keep the host's uid.
    func problem(reaching path: String, write: Bool = false) -> String? {
        guard Self.applies, path.hasPrefix("/") else { return nil }
        let parts = path.split(separator: "/")
        var prefix = ""
        for (index, part) in parts.enumerated() {
            let parent = prefix.isEmpty ? "/" : prefix
            prefix += "/" + part
            var info = stat()
            guard stat(parent, &info) == 0 else { return nil }
            if !allows(info, 0o1) { return describe(path, parent, info, "cannot pass through") }
            if index == parts.count - 1 {
                guard stat(prefix, &info) == 0 else { return nil }
                let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
                let needed: mode_t = (write ? 0o2 : 0o4) | (isDirectory ? 0o1 : 0)
                if !allows(info, needed) { return describe(path, prefix, info, write ? "cannot write" : "cannot read") }
            }
        }
        return nil
    }

    /// Why `file` itself (not the directories above it) is not readable by this user by its mode
    /// bits; nil when it is, when it is missing, or when runners keep the host's uid.
    func problem(readingFile file: String) -> String? {
        guard Self.applies else { return nil }
        var info = stat()
        guard stat(file, &info) == 0, !allows(info, 0o4) else { return nil }
        return describe(file, file, info, "cannot read")
    }

    /// Whether the mode bits of `info` give this user `bits` (of r=4, w=2, x=1).
    private func allows(_ info: stat, _ bits: mode_t) -> Bool {
        let shift: mode_t = info.st_uid == uid ? 6 : info.st_gid == gid ? 3 : 0
        return (info.st_mode >> shift) & bits == bits
    }

    private func describe(_ path: String, _ blocking: String, _ info: stat, _ what: String) -> String {
        let mode = String(info.st_mode & 0o7777, radix: 8)
        let at = blocking == path ? "" : " (\(blocking) is mode \(mode), owner \(info.st_uid), group \(info.st_gid))"
        let own = blocking == path ? " (mode \(mode), owner \(info.st_uid), group \(info.st_gid))" : ""
        return "\(path)\(own): uid \(uid) gid \(gid), the user runners run as when the host runs as root, \(what) it\(at); "
            + "make it reachable to that user (or set IsolationConfiguration.runnerUser)"
    }
}
