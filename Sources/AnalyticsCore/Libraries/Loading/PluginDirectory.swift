import Glibc

/// Lists the candidate libraries of a plugins directory: its `*.so` entries, in name order so that
/// loading (and every message about it) is the same from run to run.
enum PluginDirectory {
    struct Listing {
        var files: [String] = []
        var problems: [PluginLoadError] = []
    }

    static func list(_ directory: String, allowInsecure: Bool) -> Listing {
        var listing = Listing()
        var st = stat()
        guard stat(directory, &st) == 0 else {
            let code = errno
            let reason: PluginLoadError.Reason = code == ENOENT ? .directoryMissing : .directoryUnreadable(systemError(code))
            listing.problems.append(PluginLoadError(file: directory, reason: reason))
            return listing
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            listing.problems.append(PluginLoadError(file: directory, reason: .directoryUnreadable("not a directory")))
            return listing
        }
        if !allowInsecure, let why = FilePermissions.insecurity(of: directory, what: "plugins directory") {
            listing.problems.append(PluginLoadError(file: directory, reason: .insecurePermissions(why)))
            return listing
        }
        guard let dir = opendir(directory) else {
            listing.problems.append(PluginLoadError(file: directory, reason: .directoryUnreadable(systemError(errno))))
            return listing
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(".so"), name != ".so" { names.append(name) }
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        for name in names.sorted() {
            let path = base + name
            var fileStat = stat()
            guard stat(path, &fileStat) == 0, fileStat.st_mode & S_IFMT == S_IFREG else {
                listing.problems.append(PluginLoadError(file: path, reason: .notARegularFile))
                continue
            }
            if !allowInsecure, let why = FilePermissions.insecurity(of: path, what: "library file") {
                listing.problems.append(PluginLoadError(file: path, reason: .insecurePermissions(why)))
                continue
            }
            listing.files.append(path)
        }
        return listing
    }

    static func systemError(_ code: Int32) -> String { String(cString: strerror(code)) }
}
