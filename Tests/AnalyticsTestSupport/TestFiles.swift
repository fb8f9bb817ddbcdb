import AnalyticsCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A new private directory under the system's temporary directory (mode 0755, so that a runner
/// process or a loaded library may read it). Tests remove it in a `defer` when they want to.
public func makeTempDirectory(_ name: String = "test") -> String {
    // NSTemporaryDirectory() ends with "/": paths compare equal to what the kernel reports.
    let base = NSTemporaryDirectory().hasSuffix("/") ? String(NSTemporaryDirectory().dropLast()) : NSTemporaryDirectory()
    var template = Array((base + "/analytics-host-\(name)-XXXXXX").utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: errno \(errno)")
    let path = String(cString: made!)
    chmod(path, 0o755)
    return path
}

/// The JSON values of an NDJSON file, one per line; lines that are not JSON are left out and a
/// missing file reads as empty, so a test can poll a file that a destination is still writing.
public func readJSONLines(_ path: String) -> [JSON] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").compactMap { try? JSON(parsing: String($0)) }
}

/// SIGKILLs a child process and waits for it (by its pid only), so its locks and files are free
/// when this returns.
public func killAndReap(_ pid: pid_t) {
    kill(pid, SIGKILL)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
}

/// The JSON object in `bytes`, or nil when they hold anything else.
public func parseObject(_ bytes: [UInt8]) -> JSONObject? {
    guard case .object(let o)? = try? JSON(parsing: bytes) else { return nil }
    return o
}

/// Gives `path` to the user a root host's runners run as (uid and gid 65534, the default
/// `RunnerUser`), so that a process-mode library granted `files:` it can write there, as an
/// operator running the host as root must. Nothing when the tests do not run as root.
public func makeRunnerWritable(_ path: String) {
    if geteuid() == 0 { _ = chown(path, 65534, 65534) }
}
