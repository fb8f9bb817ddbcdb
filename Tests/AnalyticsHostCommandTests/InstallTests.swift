import AnalyticsTestSupport
import AnalyticsCore
import Foundation
import Testing

/// `make install` into a temporary DESTDIR, used the way a C plugin author outside the repository
/// uses it: pkg-config finds the header, the installed command loads the result.
@Suite(.serialized) struct InstallTests {
    /// `make -s TARGET VAR=…` in the repository, failing with make's output.
    static func make(_ arguments: [String]) throws -> String {
        let result = try FixtureBuilder.capture("/usr/bin/make", ["-s", "-C", FixtureBuilder.root] + arguments)
        guard result.status == 0 else { throw FixtureBuilder.BuildError(description: "make \(arguments) failed:\n\(result.stdout)\(result.stderr)") }
        return result.stdout
    }

    @Test func installsIntoDestdirBuildsACPluginWithPkgConfigAndTheInstalledCommandLoadsIt() throws {
        let stage = makeTempDirectory("install")
        defer { try? FileManager.default.removeItem(atPath: stage) }
        // install-files is `make install` without the release build (the debug command stands in).
        let vars = ["PREFIX=/usr", "DESTDIR=\(stage)", "HOST_BINARY=\(try HostBinary.path())"]
        _ = try Self.make(["install-files"] + vars)
        let installed = [
            "/usr/bin/analytics-host", "/usr/bin/analytics-plugin-runner", "/usr/include/analytics_plugin.h", "/usr/lib/pkgconfig/analytics-plugin.pc",
            "/usr/share/man/man1/analytics-host.1", "/usr/lib/analytics-host/plugins/libfile.so",
            "/usr/lib/analytics-host/plugins/libMetricsIntegration.so",
            "/usr/lib/analytics-host/plugins/libamplitude.so", "/usr/lib/analytics-host/plugins/libPostHogIntegration.so",
            "/usr/lib/analytics-host/plugins/libmixpanel.so",
        ]
        for file in installed { #expect(FileManager.default.fileExists(atPath: stage + file), "\(file) not installed") }
        let pc = try String(contentsOfFile: stage + "/usr/lib/pkgconfig/analytics-plugin.pc", encoding: .utf8)
        #expect(pc.contains("prefix=/usr\n") && pc.contains("Version: \(HostVersion.string)\n"))

        // A plugin author's directory, outside the repository: hello.c and the gcc line with pkg-config of docs/installing.md.
        let author = makeTempDirectory("install-author")
        defer { try? FileManager.default.removeItem(atPath: author) }
        try FileManager.default.copyItem(atPath: FixtureBuilder.root + "/Plugins/Hello/hello.c", toPath: author + "/hello.c")
        let env = "export PKG_CONFIG_PATH='\(stage)/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='\(stage)';"
        let cflags = try FixtureBuilder.capture("/bin/sh", ["-c", "\(env) pkg-config --cflags analytics-plugin"], directory: author)
        #expect(cflags.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "-I\(stage)/usr/include", "\(cflags.stderr)")
        let plugindir = try FixtureBuilder.capture("/bin/sh", ["-c", "\(env) pkg-config --variable=plugindir analytics-plugin"], directory: author)
        #expect(plugindir.stdout.hasSuffix("/usr/lib/analytics-host/plugins\n"))
        let gcc = try FixtureBuilder.capture("/bin/sh", ["-c", "\(env) gcc -std=c99 -Wall -Wextra -Werror $(pkg-config --cflags analytics-plugin) -shared -fPIC -O2 -o libhello.so hello.c"],
                                             directory: author)
        #expect(gcc.status == 0, "\(gcc.stderr)")
        let plugins = stage + "/usr/lib/analytics-host/plugins"
        // Installed as the author would: over the example Hello (same key) in the plugins directory.
        try FileManager.default.removeItem(atPath: plugins + "/libhello.so")
        try FileManager.default.copyItem(atPath: author + "/libhello.so", toPath: plugins + "/libhello.so")

        let command = stage + "/usr/bin/analytics-host"
        let version = try FixtureBuilder.capture(command, ["--version"])
        #expect(version.status == 0 && version.stdout == "analytics-host \(HostVersion.string)\n")
        let listed = try FixtureBuilder.capture(command, ["plugins", "--plugins", plugins, "--json"])
        let json = try JSON(parsing: listed.stdout)
        #expect(json["hostVersion"] == .string(HostVersion.string))
        let keys = Set(json["libraries"]?.arrayValue?.compactMap { $0["status"] == "loaded" ? $0["key"]?.stringValue : nil } ?? [])
        #expect(keys.isSuperset(of: ["Hello", "File", "Console", "Metrics", "Amplitude", "PostHog"]), "\(listed.stdout)\(listed.stderr)")
        // The installed command runs events through the plugin built against the installed header.
        try #"{"integrations":{"Hello":{}}}"#.write(toFile: author + "/settings.json", atomically: true, encoding: .utf8)
        let run = try FixtureBuilder.capture(command, ["run", "--settings", author + "/settings.json", "--plugins", author, "--storage", author + "/storage", "--quiet"],
                                             stdin: Data(#"{"type":"track","event":"Installed","userId":"u"}"#.utf8))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("hello: 1 track calls so far"), "\(run.stderr)")

        // uninstall removes every file it installed, and the plugins directory once empty.
        _ = try Self.make(["uninstall"] + vars)
        for file in installed { #expect(!FileManager.default.fileExists(atPath: stage + file), "\(file) left after uninstall") }
        #expect(!FileManager.default.fileExists(atPath: plugins))
    }

    /// The manual page is written by hand: every option of every command's --help is in it, and
    /// groff renders it without a warning.
    @Test func theManualPageDescribesEveryOptionAndRendersCleanly() throws {
        let page = try String(contentsOfFile: FixtureBuilder.root + "/doc/analytics-host.1", encoding: .utf8)
            .replacingOccurrences(of: "\\-", with: "-")
        for command in ["run", "plugins", "check-settings", "validate", "receive"] {
            let help = try HostBinary.run([command, "--help"], in: FixtureBuilder.root)
            #expect(help.status == 0)
            #expect(page.contains(".SS \(command)\n"), "no section for \(command)")
            let options = Set(help.stdout.matches(of: /--[a-z][a-z-]*[a-z]/).map { String($0.output) })
            #expect(!options.isEmpty)
            for option in options {
                #expect(page.contains(option), "analytics-host \(command) \(option) is not in doc/analytics-host.1")
            }
        }
        #expect(page.contains("--version"))
        for status in ["0", "1", "2", "3", "4", "5"] { #expect(page.contains(".B \(status)\n"), "exit status \(status) not described") }
        let groff = try FixtureBuilder.capture("/usr/bin/groff", ["-man", "-ww", "-z", FixtureBuilder.root + "/doc/analytics-host.1"])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff.stderr)")
    }

    @Test func versionIsTheHostVersion() throws {
        let result = try HostBinary.run(["--version"], in: FixtureBuilder.root)
        #expect(result.status == 0)
        #expect(result.stdout == "analytics-host \(HostVersion.string)\n")
    }
}
