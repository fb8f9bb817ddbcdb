import Glibc

/// `mkdir -p` with the reason in plain words: the component that could not be made and the
/// system's own text for why (Foundation's error here reads "NSCocoaErrorDomain error 512").
package enum DirectoryCreation {
    /// Makes `path` and its missing parents (mode 0755, less the umask); nil when it exists or
    /// was made, else why not, e.g. "/srv/data is not a directory" or "/var/lib/x: Permission denied".
    package static func make(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                if info.st_mode & S_IFMT != S_IFDIR { return "\(prefix) is not a directory" }
                continue
            }
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                return "\(prefix): \(String(cString: strerror(errno)))"
            }
        }
        return nil
    }
}
