import Glibc

/// The one safety check made before code is loaded: a library, or the directory it sits in, that
/// someone other than its owner can write is a way to run their code inside the host.
enum FilePermissions {
    /// Why `path` is unsafe to load from (nil when its mode has no group/other write bit).
    /// Symbolic links are followed: the file that would be mapped is the one that counts.
    static func insecurity(of path: String, what: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let groupWritable = st.st_mode & S_IWGRP != 0
        let otherWritable = st.st_mode & S_IWOTH != 0
        guard groupWritable || otherWritable else { return nil }
        let who = groupWritable && otherWritable ? "group and others" : groupWritable ? "group" : "others"
        return "\(what) is writable by \(who) (mode \(String(st.st_mode & 0o7777, radix: 8)))"
    }
}
