#if canImport(Glibc)
import Glibc
#endif

/// A thin owner of one POSIX file descriptor for the queue's files. Every failure becomes a
/// `QueueError.io` naming the path and the call, and EINTR/short transfers are retried here so
/// callers see all-or-error semantics.
final class StorageFile {
    let path: String
    let fd: Int32

    /// Opens `path` with `flags` (O_CLOEXEC is always added so child processes never inherit
    /// queue files or the directory lock).
    init(path: String, flags: Int32, mode: mode_t = 0o600) throws(QueueError) {
        var descriptor: Int32
        repeat {
            descriptor = open(path, flags | O_CLOEXEC, mode)
        } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        self.path = path
        self.fd = descriptor
    }

    deinit { _ = Glibc.close(fd) }

    /// Current size from fstat.
    func size() throws(QueueError) -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(path: path, operation: "fstat", errno: errno) }
        return Int(info.st_size)
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(QueueError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, base + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "write", errno: errno)
            }
            done += n
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read (fewer only at end of file).
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int) throws(QueueError) -> Int {
        var done = 0
        while done < count {
            let n = pread(fd, buffer + done, count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int) throws(QueueError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(QueueError) in try write(raw, at: offset) } }.get()
    }

    /// Up to `count` bytes from `offset` (fewer only at end of file).
    func readBytes(count: Int, at offset: Int) throws(QueueError) -> [UInt8] {
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try bytes.withUnsafeMutableBytes { raw in
            Result { () throws(QueueError) in try read(into: raw.baseAddress!, count: count, at: offset) }
        }.get()
        bytes.removeSubrange(n...)
        return bytes
    }

    func truncate(to length: Int) throws(QueueError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw .io(path: path, operation: "ftruncate", errno: errno) }
    }

    /// Forces written data to the device (power-loss durability).
    func sync() throws(QueueError) {
        guard fdatasync(fd) == 0 else { throw .io(path: path, operation: "fdatasync", errno: errno) }
    }
}

/// Directory-level operations used by the queue, each reporting the path on failure.
enum StorageDirectory {
    static func create(_ path: String) throws(QueueError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw .io(path: prefix, operation: "mkdir", errno: errno)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw .io(path: path, operation: "stat", errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .io(path: path, operation: "open directory", errno: ENOTDIR) }
    }

    /// Names of the entries in `path` (without "." and "..").
    static func list(_ path: String) throws(QueueError) -> [String] {
        guard let dir = opendir(path) else { throw .io(path: path, operation: "opendir", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func remove(_ path: String) throws(QueueError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw .io(path: path, operation: "unlink", errno: errno) }
    }

    static func rename(_ from: String, to: String) throws(QueueError) {
        guard Glibc.rename(from, to) == 0 else { throw .io(path: from, operation: "rename to \(to)", errno: errno) }
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Makes creations, renames and deletions in the directory durable (power-loss policy only).
    static func sync(_ path: String) throws(QueueError) {
        let file = try StorageFile(path: path, flags: O_RDONLY | O_DIRECTORY)
        guard fsync(file.fd) == 0 else { throw .io(path: path, operation: "fsync directory", errno: errno) }
    }

    /// A path `stem + suffix` that does not exist yet (a counter is added before the suffix if needed),
    /// so setting a file aside never overwrites an earlier one.
    static func unusedPath(stem: String, suffix: String) -> String {
        if !exists(stem + suffix) { return stem + suffix }
        var n = 2
        while exists("\(stem).\(n)\(suffix)") { n += 1 }
        return "\(stem).\(n)\(suffix)"
    }
}
