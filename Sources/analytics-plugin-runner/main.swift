import AnalyticsCore
import CRunnerSandbox
import Glibc

// analytics-plugin-runner: loads ONE integration library for analytics-host, in a process of its
// own, so that a library that crashes, exits, hangs or allocates without bound takes only this
// process down (see PluginRunner and docs/isolation.md).
//
//   analytics-plugin-runner --scan FILE  [--parent PID] [--toolchain T]
//   analytics-plugin-runner --serve FILE [--parent PID] [--toolchain T] [--memory-limit BYTES | --cgroup DIR] [--progress]
//
// The host starts it with the protocol on fd 3 (commands in) and fd 4 (results out), standard
// input on /dev/null and standard output on the host's standard error; with --progress, fd 5 is a
// shared page where it publishes the item it is calling (ProgressPage).

let arguments = Array(CommandLine.arguments.dropFirst())
func value(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    return arguments[i + 1]
}
let scanFile = value("--scan")
let serveFile = value("--serve")
guard let file = scanFile ?? serveFile else {
    FileHandle.standardErrorWrite("usage: analytics-plugin-runner (--scan|--serve) FILE [--parent PID] [--toolchain T] [--memory-limit BYTES]\n"
        + "(started by analytics-host; the protocol runs on fds 3 and 4)\n")
    exit(2)
}
var err = [CChar](repeating: 0, count: 256)
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
// ThreadSanitizer's runtime cannot live under RLIMIT_AS (a `make tsan` build only).
let limit = ThreadSanitizer.isActive ? 0 : UInt64(value("--memory-limit") ?? "0") ?? 0
let parent = Int32(value("--parent") ?? "0") ?? 0
// The memory cgroup the host made for this library (its limit holds before the library is opened).
if let cgroup = value("--cgroup"), ah_runner_join_cgroup(cgroup, &err, err.count) != 0 {
    FileHandle.standardErrorWrite("analytics-plugin-runner: \(text(err))\n")
    exit(1)
}
if ah_runner_sandbox(arguments.contains("--progress") ? 5 : PluginRunner.resultsFd, limit, parent, &err, err.count) < 0 {
    FileHandle.standardErrorWrite("analytics-plugin-runner: \(text(err))\n")
    exit(1)
}
let toolchain = value("--toolchain") ?? SwiftToolchain.current
exit(scanFile != nil ? PluginRunner.scan(file: file, toolchain: toolchain) : PluginRunner.serve(file: file, toolchain: toolchain))

enum FileHandle {
    static func standardErrorWrite(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
