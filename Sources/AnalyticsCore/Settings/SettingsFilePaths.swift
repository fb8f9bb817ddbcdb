import Foundation

/// Paths written in a settings file are relative to that file, not to wherever the process
/// happens to start: the file and the data it names usually travel together (a config directory,
/// a deployment bundle). The host cannot know every integration's options, so it applies one
/// documented convention: in each `integrations.<Name>` object, a string member named `path` or
/// ending in `Path` (`summaryPath`, `bundlePath`) that is relative is made absolute against the
/// settings file's directory. Absolute paths and `~` are left as they are.
enum SettingsFilePaths {
    static func resolve(_ settings: JSONObject, relativeTo directory: String) -> JSONObject {
        guard case .object(let integrations)? = settings["integrations"] else { return settings }
        var resolved = integrations
        var changed = false
        for (name, value) in integrations {
            guard case .object(var options) = value else { continue }
            var touched = false
            for (key, member) in options where key == "path" || key.hasSuffix("Path") {
                guard case .string(let path) = member, isRelative(path) else { continue }
                options[key] = .string(join(directory, path))
                touched = true
            }
            if touched { resolved[name] = .object(options); changed = true }
        }
        guard changed else { return settings }
        var out = settings
        out["integrations"] = .object(resolved)
        return out
    }

    static func isRelative(_ path: String) -> Bool {
        !path.isEmpty && !path.hasPrefix("/") && !path.hasPrefix("~")
    }

    /// `directory/path` with `./` segments of `path` dropped (`..` is kept: the kernel resolves it).
    static func join(_ directory: String, _ path: String) -> String {
        var rest = Substring(path)
        while rest.hasPrefix("./") { rest = rest.dropFirst(2) }
        let base = directory.isEmpty ? "." : directory
        return base.hasSuffix("/") ? base + rest : base + "/" + rest
    }

    /// The directory of a settings file, absolute (relative to the current directory when given
    /// relative), so that resolved paths do not depend on a later change of directory.
    static func directory(ofFile file: String) -> String {
        var dir = file
        if let slash = dir.lastIndex(of: "/") { dir = String(dir[..<slash]); if dir.isEmpty { dir = "/" } } else { dir = "." }
        if dir.hasPrefix("/") { return dir }
        let cwd = FileManager.default.currentDirectoryPath
        return dir == "." ? cwd : join(cwd, dir)
    }
}
