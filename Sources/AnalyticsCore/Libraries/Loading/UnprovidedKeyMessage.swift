extension Analytics {
    /// Why the settings name a key that no integration provides: its library was refused (the one
    /// named like the key, e.g. libfile.so for "File"), some libraries were refused, or it is a
    /// cloud-mode destination that runs on Segment's servers.
    static func unprovidedKeyMessage(_ key: String, refused problems: [PluginLoadError]) -> (LogLevel, String) {
        let libraries = problems.filter { $0.file.hasSuffix(".so") }
        func stem(_ file: String) -> String {
            var name = Substring(file.split(separator: "/").last ?? "")
            if name.hasPrefix("lib") { name = name.dropFirst(3) }
            return String(name.dropLast(3)).lowercased().filter { $0.isLetter || $0.isNumber }
        }
        let wanted = key.lowercased().filter { $0.isLetter || $0.isNumber }
        if let match = libraries.first(where: { stem($0.file) == wanted }) {
            return (.warning, "settings name \"\(key)\" but its library \(match.file) was refused (the reason is above): \"\(key)\" is not created")
        }
        if !libraries.isEmpty {
            let n = libraries.count
            return (.warning, "settings name \"\(key)\" but no loaded integration provides it; \(n) \(n == 1 ? "library was" : "libraries were") refused "
                + "(reported above), it may be \(n == 1 ? "that one" : "one of them"); otherwise a cloud-mode destination")
        }
        return (.info, "settings name \"\(key)\" but no integration provides it here (a cloud-mode destination?)")
    }
}
