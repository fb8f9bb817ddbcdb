import AnalyticsCore
import Foundation

/// Which plugins directory `run` and `plugins` use: `--plugins DIR`, else the environment's
/// `ANALYTICS_HOST_PLUGINS`, else the installed one, `PREFIX/lib/analytics-host/plugins` where
/// PREFIX is the directory above the command's own `bin/` (where `make install` puts the example
/// libraries; like gst-inspect's default plugin path, it follows the installation wherever it was
/// staged or moved).
struct PluginsDirectoryChoice {
    static let variable = "ANALYTICS_HOST_PLUGINS"

    enum Source: String {
        case option, environment, installed
    }

    let path: String
    let source: Source

    /// The installed plugins directory for this command (whether or not it exists).
    static var installed: String? {
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        let bin = (exe as NSString).deletingLastPathComponent
        return ((bin as NSString).deletingLastPathComponent as NSString).appendingPathComponent("lib/analytics-host/plugins")
    }

    /// The directory to use, or a usage error naming each place looked at.
    static func choose(option: String?) throws -> PluginsDirectoryChoice {
        if let option { return PluginsDirectoryChoice(path: option, source: .option) }
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty {
            return PluginsDirectoryChoice(path: value, source: .environment)
        }
        var isDirectory: ObjCBool = false
        if let installed, FileManager.default.fileExists(atPath: installed, isDirectory: &isDirectory), isDirectory.boolValue {
            return PluginsDirectoryChoice(path: installed, source: .installed)
        }
        throw UsageError("no plugins directory: no --plugins DIR, \(variable) is not set, and there is no installed one "
                         + "(\(installed ?? "PREFIX/lib/analytics-host/plugins") does not exist)")
    }

    /// How `plugins` and `run -v` name where the directory came from.
    var origin: String {
        switch source {
        case .option: return "--plugins"
        case .environment: return "$\(Self.variable)"
        case .installed: return "the installed plugins directory"
        }
    }

    /// The `--plugins` line of a command's help, with the default as it stands for this command.
    static var helpLines: String {
        """
          --plugins DIR     directory of integration libraries (*.so); default: $\(variable), else the
                            installed plugins directory (\(installed ?? "PREFIX/lib/analytics-host/plugins"))
        """
    }
}
