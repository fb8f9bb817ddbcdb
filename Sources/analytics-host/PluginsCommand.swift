import AnalyticsCore
import Foundation

/// `analytics-host plugins`: what each library in a directory is, or why it was refused —
/// the first thing a plugin author runs (like gst-inspect).
enum PluginsCommand {
    static let help = """
        usage: analytics-host plugins --plugins DIR [--json] [--allow-insecure-plugins]

        Loads every *.so in DIR the way `run` does (nothing is created or called beyond the entry
        function and the library's capability lookup) and prints, per library: file, key, version,
        ABI version, language/toolchain, its role (a destination, created from the settings'
        "integrations"; or whole-settings, created at start-up with the whole settings document
        unless integrations[key] is false — without "destination" it adds timeline plugins
        instead of receiving events) and the hooks it implements; for a refused library, the reason.

        Exit status: 0 all libraries load; 1 some were refused; 2 usage error or DIR unusable.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        let opts = try Options(arguments, valued: ["--plugins"], flags: ["--json", "--allow-insecure-plugins"])
        if opts.has("--help") { print(help); return 0 }
        let dir = try opts.required("--plugins")
        let loader = PluginLoader(configuration: .init(allowGroupOrOtherWritable: opts.has("--allow-insecure-plugins")))
        let scan = loader.scan(directory: dir)
        let directoryUnusable = scan.problems.contains {
            switch $0.reason {
            case .directoryMissing, .directoryUnreadable: return true
            case .insecurePermissions: return $0.file == dir
            default: return false
            }
        }

        if opts.has("--json") {
            var entries: [JSON] = scan.libraries.map { lib in
                let i = lib.info
                var o: JSONObject = ["file": .string(i.file), "status": "loaded", "key": .string(i.key),
                                     "version": .string(i.version), "abiVersion": .string(i.abiVersion.description),
                                     "language": .string(i.language)]
                o["toolchain"] = i.toolchain.map(JSON.string) ?? .null
                o["hooks"] = .array(i.hooks.names.map(JSON.string))
                o["role"] = .string(i.role.description)
                o["destination"] = .bool(i.isDestination)
                o["wholeSettings"] = .bool(i.wantsWholeSettings)
                return .object(o)
            }
            entries += scan.problems.map { p in ["file": .string(p.file), "status": "refused", "reason": .string(p.reasonText)] }
            print(JSON.object(["directory": .string(dir), "hostVersion": .string(HostVersion.string),
                               "libraries": .array(entries)]).serialized())
        } else {
            print("plugins in \(dir): \(scan.libraries.count) loaded, \(scan.problems.count) refused")
            // Keys, versions, toolchains and reasons come from the libraries: escaped (TerminalText).
            let e = TerminalText.escaped
            for lib in scan.libraries {
                let i = lib.info
                print("""

                    \(e(i.key))  \(e(i.version))
                      file       \(e(i.file))
                      ABI        \(i.abiVersion)
                      language   \(e(i.language))\(i.toolchain.map { " (\(e($0)))" } ?? "")
                      role       \(e(roleText(i)))
                      hooks      \(i.hooks.names.joined(separator: " "))
                    """)
            }
            for p in scan.problems {
                print("\nREFUSED  \(e(p.file))\n  reason   \(e(p.reasonText))")
            }
        }
        if directoryUnusable { return 2 }
        return scan.problems.isEmpty ? 0 : 1
    }

    /// What the role means for a user, in one line.
    static func roleText(_ info: NativeLibraryInfo) -> String {
        switch (info.isDestination, info.wantsWholeSettings) {
        case (true, false): return "destination (created when the settings' integrations name \"\(info.key)\")"
        case (true, true): return "destination, whole settings (created at start-up unless integrations[\"\(info.key)\"] is false)"
        case (false, _): return "timeline plugins, whole settings (not a destination; created at start-up unless integrations[\"\(info.key)\"] is false)"
        }
    }
}
