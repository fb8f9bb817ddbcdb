import Foundation
import Glibc

/// What a runner's Landlock domain lets it reach of the file system by path: to read, what
/// loading the library's dependencies and running the Swift runtime need (the system's library
/// directories, the directories of every file the runner has mapped, time zones, certificates,
/// its own /proc entry, the CPU list); to write, its own directory (the host makes it) and
/// /dev/null. The library file itself and what the settings grant (`files:`, `read:`) are added by
/// the descriptors the host hands over (`RunnerFiles`). Nothing else: not the host's settings,
/// queue, user state, scan cache or plugin directories (unless one of them is inside a granted
/// path).
package enum RunnerJailPaths {
    package static let system = [
        "/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32", "/usr/share/zoneinfo", "/usr/share/locale",
        "/usr/share/icu", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs", "/etc/ca-certificates",
        "/proc/self", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random", "/dev/zero",
    ]

    /// Paths to read and paths to write for a runner whose own directory is `own`.
    package static func paths(own: String?) -> (read: [String], write: [String]) {
        var read = system
        read.append(contentsOf: mappedDirectories())
        if let path = getenv("LD_LIBRARY_PATH") {
            read.append(contentsOf: String(cString: path).split(separator: ":").map(String.init).filter { $0.hasPrefix("/") })
        }
        var write = ["/dev/null"]
        if let own { write.append(own) }
        return (Array(Set(read)).sorted(), write)
    }

    /// The directories of the files this process has mapped (its executable, the Swift runtime,
    /// Foundation and the C libraries, wherever the toolchain put them).
    static func mappedDirectories() -> [String] {
        guard let text = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return [] }
        var directories = Set<String>()
        for line in text.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.hasSuffix(" (deleted)") { continue }
            directories.insert((path as NSString).deletingLastPathComponent)
        }
        return Array(directories)
    }
}
