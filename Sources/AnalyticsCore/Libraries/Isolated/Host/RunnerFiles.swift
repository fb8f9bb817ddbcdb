import Glibc

/// The files a runner is handed open rather than by name: the library, and each path its grants
/// name (`files:`, `read:`). The host opens them with its own rights, so a runner of a root host
/// (another user, see `RunnerUser`) loads a library from a directory only root may pass
/// (`/root/plugins`, mode 700), and its Landlock rules for the grants never depend on a path that
/// user could reach. The runner opens no path for them: it `dlopen`s `/proc/self/fd/N` (the
/// kernel checks the file's own mode, not its directories) and makes each Landlock rule from its
/// descriptor.
///
/// In the runner the library is descriptor `PluginRunner.libraryFd` (6) and the grants follow it
/// (7, 8, …), each named by an argument (`--allow-files-fd N`, `--allow-read-fd N`). A granted path
/// that does not exist grants nothing, as before.
final class RunnerFiles: @unchecked Sendable {
    /// The host's descriptors (close-on-exec), in the order the runner gets them from
    /// `PluginRunner.libraryFd` on.
    let descriptors: [Int32]
    /// The runner's arguments that name them.
    let arguments: [String]

    struct OpenError: Error, CustomStringConvertible { let description: String }

    private init(descriptors: [Int32], arguments: [String]) {
        self.descriptors = descriptors
        self.arguments = arguments
    }

    /// Opens `library` (a regular file, read-only) and the paths `grants` names.
    static func open(library: String, grants: JailGrants = JailGrants()) throws(OpenError) -> RunnerFiles {
        // Non-blocking: a FIFO put where the library was must not block the host.
        let fd = Glibc.open(library, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw OpenError(description: "cannot open it: \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw OpenError(description: "not a regular file")
        }
        var opened = [fd]
        var arguments = ["--library-fd", String(PluginRunner.libraryFd)]
        for (paths, option) in [(grants.files, "--allow-files-fd"), (grants.read, "--allow-read-fd")] {
            for path in paths {
                let granted = Glibc.open(path, Self.pathOnly | O_CLOEXEC)
                guard granted >= 0 else { continue }
                arguments += [option, String(PluginRunner.libraryFd + Int32(opened.count))]
                opened.append(granted)
            }
        }
        // Above every number the child is given (0…5, then these), so that no dup2 of the spawn
        // overwrites a descriptor a later one copies from.
        let lowest = PluginRunner.libraryFd + Int32(opened.count)
        var failure: Int32 = 0
        let descriptors = opened.map { fd -> Int32 in
            guard fd < lowest else { return fd }
            let high = fcntl(fd, F_DUPFD_CLOEXEC, lowest)
            if high < 0 { failure = errno }
            close(fd)
            return high
        }
        if failure != 0 {
            for fd in descriptors where fd >= 0 { close(fd) }
            throw OpenError(description: "cannot hand it to the runner: \(String(cString: strerror(failure)))")
        }
        return RunnerFiles(descriptors: descriptors, arguments: arguments)
    }

    /// O_PATH (a descriptor that names a file or directory without reading it), which Glibc's
    /// Swift module leaves out (it needs _GNU_SOURCE); the same value on x86-64 and AArch64.
    private static let pathOnly: Int32 = 0o10000000

    deinit {
        for fd in descriptors { close(fd) }
    }
}
