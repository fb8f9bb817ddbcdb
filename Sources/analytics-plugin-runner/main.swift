import AnalyticsCore
import CRunnerSandbox
import Glibc

// analytics-plugin-runner: loads ONE integration library for analytics-host, in a process of its
// own, so that a library that crashes, exits, hangs or allocates without bound takes only this
// process down (see PluginRunner and docs/isolation.md).
//
//   analytics-plugin-runner --scan FILE  --library-fd 6 [--parent PID] [--toolchain T]
//   analytics-plugin-runner --serve FILE --library-fd 6 [--parent PID] [--toolchain T] [--memory-limit BYTES | --cgroup DIR] [--progress]
//                           [--grant network] [--max-open-files N] [--max-file-bytes BYTES]
//                           [--own-directory DIR] [--allow-files-fd N]... [--allow-read-fd N]...
//                           [--uid UID --gid GID]   (started by a root host: the user it becomes)
//
// The host starts it in a session of its own with the protocol on fd 3 (commands in) and fd 4
// (results out), standard input on /dev/null and standard output and error on a pipe the host
// reads (each line prefixed with the library's key); with --progress, fd 5 is a shared page where
// it publishes the item it is calling and the calls its filter refused (ProgressPage). The library
// (FILE names it) is open at fd 6 and each granted path at the fd its option names: the host opened
// them (RunnerFiles), so this process, another user under a root host, needs no path to them.

let arguments = Array(CommandLine.arguments.dropFirst())
func value(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
// `--validate CHECK FILE [--settings JSON] [--uid UID --gid GID]`: one check of `analytics-host
// validate`, its verdict on standard output (LibraryValidator), as the user a `--serve` runner is.
// The library comes open on standard input (the validator's Process hands over no other
// descriptor): moved to fd 6, and standard input becomes /dev/null.
if let i = arguments.firstIndex(of: "--validate"), i + 2 < arguments.count {
    var err = [CChar](repeating: 0, count: 256)
    let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
    guard dup2(0, PluginRunner.libraryFd) == PluginRunner.libraryFd, null >= 0, dup2(null, 0) == 0 else {
        LibraryValidator.report(.fail, "the runner could not take the library's descriptor: \(String(cString: strerror(errno)))")
        exit(1)
    }
    close(null)
    SwiftToolchain.provideDebugSupport()
    var jail = ah_jail_options(keep_max: PluginRunner.libraryFd, memory_limit: 0, parent_pid: 0, grants: 0, report_fd: -1, max_open_files: 0, max_file_bytes: 0,
                               run_as_uid: value("--uid").flatMap { Int64($0) } ?? -1, run_as_gid: value("--gid").flatMap { Int64($0) } ?? -1)
    if ah_runner_sandbox(&jail, &err, err.count) < 0 {
        LibraryValidator.report(.fail, "the runner's jail could not be set up: \(String(decoding: err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        exit(1)
    }
    let settings = value("--settings").flatMap { try? JSON(parsing: Array($0.utf8)) }?.objectValue ?? [:]
    exit(LibraryValidator.runCheck(arguments[i + 1], file: arguments[i + 2], descriptor: PluginRunner.libraryFd, settings: settings,
                                   toolchain: value("--toolchain") ?? SwiftToolchain.current))
}
let scanFile = value("--scan")
let serveFile = value("--serve")
guard let file = scanFile ?? serveFile, let libraryFd = value("--library-fd").flatMap({ Int32($0) }) else {
    FileHandle.standardErrorWrite("usage: analytics-plugin-runner (--scan|--serve) FILE --library-fd N [--parent PID] [--toolchain T] [--memory-limit BYTES]\n"
        + "(started by analytics-host; the protocol runs on fds 3 and 4, the library is open at fd N)\n")
    exit(2)
}
func values(_ name: String) -> [String] { zip(arguments, arguments.dropFirst()).filter { $0.0 == name }.map(\.1) }
let grantedFiles = values("--allow-files-fd").compactMap { Int32($0) }
let grantedRead = values("--allow-read-fd").compactMap { Int32($0) }
var err = [CChar](repeating: 0, count: 256)
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
// ThreadSanitizer's runtime cannot live under RLIMIT_AS (a `make tsan` build only).
let limit = ThreadSanitizer.isActive ? 0 : UInt64(value("--memory-limit") ?? "0") ?? 0
let parent = Int32(value("--parent") ?? "0") ?? 0
// The memory cgroup the host made for this library (its limit holds before the library is opened).
// Its pids cgroup (processes and threads of the library), likewise.
for cgroup in [value("--pids-cgroup"), value("--cgroup")].compactMap({ $0 }) where ah_runner_join_cgroup(cgroup, &err, err.count) != 0 {
    FileHandle.standardErrorWrite("analytics-plugin-runner: \(text(err))\n")
    exit(1)
}
// What a debug-built Swift library needs, loaded while this process may still read the whole
// toolchain (before it becomes another user and before Landlock).
SwiftToolchain.provideDebugSupport()
let progress = arguments.contains("--progress")
// Nothing at fd 5 but the progress page.
if !progress { close(5) }
let grants: UInt32 = (value("--grant") ?? "").split(separator: ",").contains("network") ? UInt32(AH_GRANT_NETWORK) : 0
let handed = [libraryFd] + grantedFiles + grantedRead
var options = ah_jail_options(keep_max: max(progress ? 5 : PluginRunner.resultsFd, handed.max()!),
                              memory_limit: limit, parent_pid: parent, grants: grants,
                              report_fd: progress ? 5 : -1, max_open_files: UInt64(value("--max-open-files") ?? "0") ?? 0,
                              max_file_bytes: UInt64(value("--max-file-bytes") ?? "0") ?? 0,
                              run_as_uid: value("--uid").flatMap { Int64($0) } ?? -1, run_as_gid: value("--gid").flatMap { Int64($0) } ?? -1)
if ah_runner_sandbox(&options, &err, err.count) < 0 {
    FileHandle.standardErrorWrite("analytics-plugin-runner: \(text(err))\n")
    exit(1)
}
// The file system and the network (Landlock, where the kernel has it): before the library is
// opened, so that its constructors are confined too. The library and the grants by the
// descriptors the host handed over; the grants' are closed once the rules are made.
let reach = RunnerJailPaths.paths(own: value("--own-directory"))
let readFds = [libraryFd] + grantedRead
let confined = withCStrings(reach.read) { read in
    withCStrings(reach.write) { write in
        ah_runner_landlock(read.baseAddress, read.count, write.baseAddress, write.count, readFds, readFds.count,
                           grantedFiles, grantedFiles.count, grants, &err, err.count)
    }
}
for fd in grantedFiles + grantedRead { close(fd) }
if confined < 0 {
    FileHandle.standardErrorWrite("analytics-plugin-runner: \(text(err))\n")
    exit(1)
}
let toolchain = value("--toolchain") ?? SwiftToolchain.current
exit(scanFile != nil ? PluginRunner.scan(file: file, descriptor: libraryFd, toolchain: toolchain)
                     : PluginRunner.serve(file: file, descriptor: libraryFd, toolchain: toolchain))

/// `body` with the strings as a C array of `const char *`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { UnsafePointer(strdup($0)) }
    defer { for p in copies { free(UnsafeMutablePointer(mutating: p)) } }
    return copies.withUnsafeBufferPointer(body)
}

enum FileHandle {
    static func standardErrorWrite(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
