import AnalyticsTestSupport
import AnalyticsCore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Which plugins directory `plugins` and `run` use without `--plugins`: $ANALYTICS_HOST_PLUGINS,
/// then the installed one (PREFIX/lib/analytics-host/plugins beside the command's bin/; the
/// installed case is in InstallTests), each shown in `--help` and in `plugins`' output.
@Suite struct PluginsDirectoryChoiceTests {
    /// The command with a controlled environment: `unset` removed, `set` added.
    func host(_ arguments: [String], set: [String] = [], stdin: String? = nil, in dir: String) throws -> FixtureBuilder.ProcessOutput {
        try FixtureBuilder.capture("/usr/bin/env", ["-u", "ANALYTICS_HOST_PLUGINS", "XDG_CACHE_HOME=\(dir)/cache"] + set + [try HostBinary.path()] + arguments,
                                   stdin: stdin.map { Data($0.utf8) }, directory: dir)
    }

    /// Where the command under test would find its installed plugins directory (beside the bin/
    /// of its real path, as /proc/self/exe gives it).
    static var installed: String {
        guard let path = try? HostBinary.path(), let real = realpath(path, nil) else { return "?" }
        defer { free(real) }
        let bin = (String(cString: real) as NSString).deletingLastPathComponent
        return (bin as NSString).deletingLastPathComponent + "/lib/analytics-host/plugins"
    }
    var installed: String { Self.installed }

    @Test func helpNamesTheVariableAndTheInstalledDirectory() throws {
        let dir = makeTempDirectory("plugins-default")
        defer { FixtureBuilder.remove(dir) }
        for command in ["plugins", "run"] {
            let help = try host([command, "--help"], in: dir)
            #expect(help.status == 0)
            #expect(help.stdout.contains("[--plugins DIR]"), "\(command): \(help.stdout)")
            #expect(help.stdout.contains("default: $ANALYTICS_HOST_PLUGINS, else the"), "\(command): \(help.stdout)")
            #expect(help.stdout.contains("installed plugins directory (\(installed))"), "\(command): \(help.stdout)")
        }
    }

    @Test func theVariableNamesTheDirectoryOfPluginsAndRun() throws {
        let dir = makeTempDirectory("plugins-default")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let listed = try host(["plugins"], set: ["ANALYTICS_HOST_PLUGINS=\(plugins)"], in: dir)
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        #expect(listed.stdout.hasPrefix("plugins in \(plugins): 2 loaded, 0 refused\n($ANALYTICS_HOST_PLUGINS; --plugins DIR lists another)\n"), "\(listed.stdout)")
        let json = try host(["plugins", "--json"], set: ["ANALYTICS_HOST_PLUGINS=\(plugins)"], in: dir)
        let document = try JSON(parsing: json.stdout)
        #expect(document["directory"] == .string(plugins) && document["directorySource"] == "environment", "\(json.stdout)")
        // --plugins wins over the variable.
        let other = dir + "/other"
        mkdir(other, 0o755)
        let option = try host(["plugins", "--plugins", other, "--json"], set: ["ANALYTICS_HOST_PLUGINS=\(plugins)"], in: dir)
        let chosen = try JSON(parsing: option.stdout)
        #expect(chosen["directory"] == .string(other) && chosen["directorySource"] == "option", "\(option.stdout)")

        let output = dir + "/out.ndjson"
        let settings = try HostBinary.settings(in: dir, output: output, console: false)
        let run = try host(["run", "--settings", settings, "--storage", dir + "/storage", "--quiet"], set: ["ANALYTICS_HOST_PLUGINS=\(plugins)"],
                           stdin: #"{"type":"track","event":"Defaulted","userId":"u"}"# + "\n", in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(readJSONLines(output).first?["event"] == "Defaulted", "the File library of the variable's directory ran")
    }

    /// Neither --plugins, nor the variable, nor an installed directory: a usage error naming all
    /// three places (the command under test is not installed: .build has no lib/analytics-host).
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: PluginsDirectoryChoiceTests.installed), "an installed plugins directory is beside the command under test"))
    func noDirectoryAnywhereIsAUsageErrorNamingEachPlace() throws {
        let dir = makeTempDirectory("plugins-default")
        defer { FixtureBuilder.remove(dir) }
        for arguments in [["plugins"], ["run", "--settings", try HostBinary.settings(in: dir, output: dir + "/out.ndjson")]] {
            let result = try host(arguments, stdin: "", in: dir)
            #expect(result.status == 2, "\(arguments): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("no plugins directory: no --plugins DIR, ANALYTICS_HOST_PLUGINS is not set, and there is no installed one (\(installed) does not exist)"),
                    "\(arguments): \(result.stderr)")
        }
    }

    /// A directory that does not exist is not a refused library: `plugins` says it cannot be
    /// listed and exits 2, in both forms.
    @Test func aMissingDirectoryIsNotCountedAsARefusedLibrary() throws {
        let dir = makeTempDirectory("plugins-default")
        defer { FixtureBuilder.remove(dir) }
        let missing = dir + "/missing"
        let text = try host(["plugins", "--plugins", missing], in: dir)
        #expect(text.status == 2)
        #expect(text.stdout == "plugins in \(missing): cannot be listed: plugins directory does not exist\n", "\(text.stdout)")
        let json = try host(["plugins", "--plugins", missing, "--json"], in: dir)
        #expect(json.status == 2)
        let document = try JSON(parsing: json.stdout)
        #expect(document["libraries"] == .array([]) && document["error"] == "plugins directory does not exist", "\(json.stdout)")
    }
}
