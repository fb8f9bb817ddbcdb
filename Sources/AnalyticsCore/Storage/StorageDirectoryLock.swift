#if canImport(Glibc)
import Glibc
#endif

/// Exclusive ownership of a queue directory: `flock(LOCK_EX|LOCK_NB)` on a lock file. The lock
/// belongs to the open file, so it conflicts with other processes and with a second queue in the
/// same process alike, and the kernel releases it when the owner exits or is killed.
final class StorageDirectoryLock {
    let file: StorageFile

    init(path: String) throws(QueueError) {
        let file = try StorageFile(path: path, flags: O_RDWR | O_CREAT)
        var result: Int32
        repeat { result = flock(file.fd, LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
        if result != 0 {
            let code = errno
            if code == EWOULDBLOCK { throw .locked(path: path, holderPID: Self.holder(file)) }
            throw .io(path: path, operation: "flock", errno: code)
        }
        // Record the owner for the error message another opener will see.
        let pid = Array("\(getpid())\n".utf8)
        try file.truncate(to: 0)
        try file.write(pid, at: 0)
        self.file = file
    }

    private static func holder(_ file: StorageFile) -> Int32? {
        let bytes = (try? file.readBytes(count: 16, at: 0)) ?? []
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\n")
        return Int32(text)
    }
}

private extension String {
    func trimmingCharacters(in character: Character) -> String {
        String(self.filter { $0 != character })
    }
}
