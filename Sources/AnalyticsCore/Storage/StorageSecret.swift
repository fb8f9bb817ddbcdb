#if canImport(Glibc)
import Glibc
#endif

/// The storage's secret: 16 random bytes in `storage.key` (mode 0600) that key the MACs of the
/// queues' records (``StorageRecordFormat``), so that a record the host did not write — put into
/// a segment by anything that could write the file but cannot read the key — is reported and not
/// delivered. Made on first use; read by the host only (a process-mode library's jail does not
/// reach the storage directory).
///
/// `createdNow` says this open made it: the storage had no key before, so segments in the old
/// (CRC-checked) format are from before the key and may be read once (`StorageLegacySegments`).
package final class StorageSecret: Sendable, Equatable {
    package static let fileName = "storage.key"
    let path: String
    let key: SipHash24
    let createdNow: Bool
    /// A key file that was no key and was set aside (to report: records under it will not verify).
    let problem: QueueError?

    private init(path: String, key: SipHash24, createdNow: Bool, problem: QueueError? = nil) {
        self.path = path
        self.key = key
        self.createdNow = createdNow
        self.problem = problem
    }

    package static func == (a: StorageSecret, b: StorageSecret) -> Bool { a.path == b.path && a.key == b.key }

    private static let prefix = "analytics-host storage key 1\n"

    /// The secret of the storage directory `directory` (made when missing).
    package static func open(directory: String) throws(QueueError) -> StorageSecret {
        try open(path: directory + "/" + fileName)
    }

    /// Reads the secret at `path`, or makes it when there is none. A file that is not a key
    /// (damaged, or written by something else) is set aside as `<path>.corrupt` and a new key
    /// made: records under the old one are then reported as not written by this host, never
    /// delivered unchecked.
    package static func open(path: String) throws(QueueError) -> StorageSecret {
        var problem: QueueError?
        for _ in 0..<3 {
            switch read(path) {
            case .success(let key): return StorageSecret(path: path, key: key, createdNow: false, problem: problem)
            case .failure(.missing): break
            case .failure(.unusable(let reason)):
                let aside = StorageDirectory.unusedPath(stem: path, suffix: ".corrupt")
                try StorageDirectory.rename(path, to: aside)
                problem = .badSecret(path: path, reason: reason, setAsideAs: aside)
            case .failure(.io(let error)): throw error
            }
            if let key = try create(path) { return StorageSecret(path: path, key: key, createdNow: true, problem: problem) }
            // Another process made it meanwhile: read theirs.
        }
        throw .io(path: path, operation: "create the storage key (it keeps changing)", errno: EAGAIN)
    }

    private enum ReadProblem: Error { case missing, unusable(String), io(QueueError) }

    private static func read(_ path: String) -> Result<SipHash24, ReadProblem> {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return .failure(.missing) }
            if errno == ELOOP { return .failure(.unusable("it is a symbolic link")) }
            return .failure(.io(.io(path: path, operation: "open", errno: errno)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(.io(.io(path: path, operation: "stat", errno: errno))) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .failure(.unusable("not a regular file")) }
        // Others must not read it: tighten a mode someone loosened (the key may have leaked: that
        // is for whoever loosened it to know).
        if info.st_mode & 0o077 != 0 && info.st_uid == geteuid() { _ = fchmod(fd, 0o600) }
        var bytes = [UInt8](repeating: 0, count: 128)
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { return .failure(.io(.io(path: path, operation: "read", errno: errno))) }
        let text = String(decoding: bytes.prefix(n), as: UTF8.self)
        guard text.hasPrefix(prefix) else { return .failure(.unusable("it does not start with \"analytics-host storage key 1\"")) }
        let hex = text.dropFirst(prefix.count).prefix { $0 != "\n" }
        guard hex.count == 32, let key = parseHex(hex) else { return .failure(.unusable("no 32-digit hexadecimal key on its second line")) }
        return .success(SipHash24(key: key))
    }

    /// Writes a new key into a temporary file and links it into place (so that a reader never
    /// sees half a key, and of two processes making one at once, one wins). nil when a key
    /// appeared meanwhile.
    private static func create(_ path: String) throws(QueueError) -> SipHash24? {
        var generator = SystemRandomNumberGenerator()
        var key = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 { key[i] = UInt8.random(in: 0...255, using: &generator) }
        let hex = key.map { byte in String(byte >> 4, radix: 16) + String(byte & 15, radix: 16) }.joined()
        let text = prefix + hex + "\n"
        let temporary = path + ".new-\(getpid())"
        _ = unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io(path: temporary, operation: "create", errno: errno) }
        defer { _ = unlink(temporary) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        let code = errno
        close(fd)
        guard written == bytes.count, synced else { throw .io(path: temporary, operation: "write", errno: code) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST { return nil }
            throw .io(path: path, operation: "link", errno: errno)
        }
        try? StorageDirectory.sync(directory(of: path))
        return SipHash24(key: key)
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func parseHex(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
