import Glibc

// Compiled into every fuzz target (Tests/Fuzz/Targets/*.swift): how a target reports a broken
// property, and the small helpers several targets share.

/// Stops the run on a broken property. libFuzzer catches the abort and saves the input as
/// `crash-*` next to the target's log, so every failure can be replayed and minimised.
func fuzzFail(_ message: String) -> Never {
    let line = Array("fuzz property failed: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    abort()
}

/// `fuzzFail` unless `condition` holds.
@inline(__always)
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fuzzFail(message()) }
}

/// The input split at the first `separator`: the part before it and the rest (nil when absent).
func fuzzSplit(_ input: UnsafeBufferPointer<UInt8>, at separator: UInt8) -> (head: [UInt8], tail: [UInt8]?) {
    guard let i = input.firstIndex(of: separator) else { return (Array(input), nil) }
    return (Array(input[..<i]), Array(input[(i + 1)...]))
}

/// A fresh private directory under $TMPDIR (or /tmp), removed with everything in it by `remove`.
struct FuzzTemporaryDirectory {
    let path: String

    init() {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/analytics-fuzz-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fuzzFail("mkdtemp failed: errno \(errno)") }
        path = String(cString: made)
    }

    /// Removes the directory tree (one level of subdirectories is all the queue creates).
    func remove() {
        Self.removeTree(path)
    }

    private static func removeTree(_ path: String) {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                if name == "." || name == ".." { continue }
                let child = path + "/" + name
                var info = stat()
                if lstat(child, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
            }
            closedir(dir)
        }
        rmdir(path)
    }

    /// Names in the directory (no `.` / `..`), sorted.
    func list() -> [String] {
        var names: [String] = []
        guard let dir = opendir(path) else { return [] }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)
        return names.sorted()
    }
}

/// Writes `bytes` to `path` (created or truncated); false on any error.
@discardableResult
func fuzzWriteFile(_ path: String, _ bytes: some Collection<UInt8>) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    let array = Array(bytes)
    var done = 0
    while done < array.count {
        let n = array.withUnsafeBytes { write(fd, $0.baseAddress! + done, array.count - done) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        done += n
    }
    return true
}
