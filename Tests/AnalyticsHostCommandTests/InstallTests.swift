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
        // install-files is `make install` without the release builds (the debug command and the
        // libraries of `make plugins` stand in; the next test installs the release builds).
        let vars = ["PREFIX=/usr", "DESTDIR=\(stage)", "HOST_BINARY=\(try HostBinary.path())", "INSTALL_PLUGINS_DIR=\(FixtureBuilder.root)/build/plugins"]
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
        // The installed plugins directory is the command's default.
        let listed = try FixtureBuilder.capture("/usr/bin/env", ["-u", "ANALYTICS_HOST_PLUGINS", "XDG_CACHE_HOME=\(author)/cache", command, "plugins", "--json"])
        let json = try JSON(parsing: listed.stdout)
        #expect(json["hostVersion"] == .string(HostVersion.string))
        #expect(json["directory"] == .string(plugins) && json["directorySource"] == "installed", "\(listed.stdout)")
        #expect(json["libraries"]?.arrayValue?.allSatisfy { $0["status"] == "loaded" } == true, "every installed library loads: \(listed.stdout)")
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

    /// What `make install` installs: the release builds of the command, its runner and every
    /// example library that `make install-build` made (`make test` makes them first; a build here
    /// would wait for ever on the SwiftPM lock `swift test` holds). The installed command lists
    /// every installed library as loaded from its default plugins directory (the installed one),
    /// none of the Swift ones is a debug build, and a debug-built Swift library (`make plugins`
    /// builds them so) loads in it too and delivers, in process and in process mode.
    @Test func makeInstallInstallsReleaseBuildsWhichTheInstalledCommandAllLoads() throws {
        let released = FixtureBuilder.root + "/build/release-plugins"
        for built in [FixtureBuilder.root + "/.build/release/analytics-host", FixtureBuilder.root + "/.build/release/analytics-plugin-runner", released + "/libMetricsIntegration.so"] {
            try #require(FileManager.default.fileExists(atPath: built), "\(built) is not built: run `make install-build` (or `make test`) before `swift test`")
        }
        let stage = makeTempDirectory("install-release")
        defer { try? FileManager.default.removeItem(atPath: stage) }
        let vars = ["PREFIX=/usr", "DESTDIR=\(stage)"]
        _ = try Self.make(["install-files"] + vars)
        let plugins = stage + "/usr/lib/analytics-host/plugins"
        let installed = try FileManager.default.contentsOfDirectory(atPath: plugins).filter { $0.hasSuffix(".so") }.sorted()
        let swift = ["libGoogleAnalytics4Integration.so", "libMetricsIntegration.so", "libPostHogIntegration.so", "libWebhooksIntegration.so"]
        #expect(Set(installed).isSuperset(of: swift + ["libamplitude.so", "libconsole.so", "libfile.so", "libhello.so", "libmixpanel.so", "libredact.so"]),
                "\(installed)")
        for file in swift + ["../../../bin/analytics-host", "../../../bin/analytics-plugin-runner"] {
            let needed = try FixtureBuilder.capture("/usr/bin/readelf", ["-d", plugins + "/" + file])
            #expect(needed.status == 0 && needed.stdout.contains("libswiftCore.so"), "\(file): \(needed.stderr)")
            #expect(!needed.stdout.contains("libswiftSwiftOnoneSupport.so"), "\(file) is a debug build")
        }

        let command = stage + "/usr/bin/analytics-host"
        let dir = makeTempDirectory("install-release-run")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func host(_ arguments: [String], stdin: String? = nil) throws -> FixtureBuilder.ProcessOutput {
            try FixtureBuilder.capture("/usr/bin/env", ["-u", "ANALYTICS_HOST_PLUGINS", "XDG_CACHE_HOME=\(dir)/cache", command] + arguments,
                                       stdin: stdin.map { Data($0.utf8) }, directory: dir)
        }
        let listed = try host(["plugins", "--json"])
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        let json = try JSON(parsing: listed.stdout)
        #expect(json["directory"] == .string(plugins) && json["directorySource"] == "installed", "\(listed.stdout)")
        let entries = json["libraries"]?.arrayValue ?? []
        #expect(entries.map { ($0["file"]?.stringValue ?? "") }.sorted() == installed.map { plugins + "/" + $0 }, "\(listed.stdout)")
        #expect(entries.allSatisfy { $0["status"] == "loaded" }, "every installed library loads: \(listed.stdout)")

        // A debug-built Swift library (it needs the toolchain's libswiftSwiftOnoneSupport.so) in
        // the release command, in-process and in process mode.
        let debugBuilt = dir + "/plugins"
        mkdir(debugBuilt, 0o755)
        try FileManager.default.copyItem(atPath: FixtureBuilder.root + "/build/plugins/libMetricsIntegration.so", toPath: debugBuilt + "/libMetricsIntegration.so")
        let needed = try FixtureBuilder.capture("/usr/bin/readelf", ["-d", debugBuilt + "/libMetricsIntegration.so"])
        #expect(needed.stdout.contains("libswiftSwiftOnoneSupport.so"), "the library under test is a debug build")
        for isolate in [false, true] {
            let out = dir + "/out-\(isolate)"
            mkdir(out, 0o755)
            makeRunnerWritable(out)
            let settings = dir + "/settings-\(isolate).json"
            let isolation = isolate ? #","isolation":{"mode":"process","allow":["files:\#(out)"]}"# : ""
            try #"{"integrations":{"Metrics":{"path":"\#(out)/metrics.json"\#(isolation)}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
            let run = try host(["run", "--settings", settings, "--plugins", debugBuilt, "--storage", dir + "/storage-\(isolate)", "--quiet"],
                               stdin: #"{"type":"track","event":"Debug Built","userId":"u"}"# + "\n")
            #expect(run.status == 0, "isolated \(isolate): \(run.stderr)")
            let metrics = try? JSON(parsing: Array(FileManager.default.contents(atPath: out + "/metrics.json") ?? Data()))
            #expect(metrics?["total"]?.intValue == 1, "isolated \(isolate): \(run.stderr)")
        }
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
