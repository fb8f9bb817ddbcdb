import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Builds the Mixpanel library from Plugins/Mixpanel and Plugins/VendorSupport with the flags of
/// `make plugins`, once per test process, and makes instances of it talking to a `MixpanelFake`.
enum MixpanelBuild {
    static var sources: [String] { FixtureBuilder.vendorSources("Mixpanel") }

    static func library() throws -> String { try built.get() }

    private static let built: Result<String, any Error> = Result {
        let dir = makeTempDirectory("loader")
        let output = dir + "/libmixpanel.so"
        try FixtureBuilder.run("/usr/bin/gcc", ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wmissing-prototypes", "-Werror", "-I", FixtureBuilder.root + "/include",
                                                "-shared", "-fPIC", "-fvisibility=hidden", "-o", output] + sources + ["-pthread"])
        return output
    }

    /// Host services with the host's HTTP client (what the library sends through).
    static func services() -> HostServices {
        var services = RecordingHost().services
        services.http = HostServices.HTTP.using(HTTPClient())
        return services
    }

    /// The settings naming `fake` (token, API secret unless `secret` is false, apiHost) plus `extra`.
    static func settings(_ fake: MixpanelFake, _ extra: String = "", secret: Bool = true) -> String {
        #"{"projectToken":"\#(fake.token)"\#(secret ? #","apiSecret":"\#(fake.apiSecret)""# : ""),"apiHost":"\#(fake.baseURL)"\#(extra.isEmpty ? "" : "," + extra)}"#
    }

    /// A loaded instance talking to `fake`.
    static func instance(_ fake: MixpanelFake, _ extra: String = "", secret: Bool = true) throws -> NativeIntegration {
        let library = try PluginLoader().load(file: try library())
        return try library.makeInstance(settings: settingsObject(settings(fake, extra, secret: secret)), services: services())
    }

    /// A plugins directory holding `libraries` (file names in build order) under `dir`.
    static func pluginsDirectory(in dir: String, amplitude: Bool = false) throws -> String {
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try library(), toPath: plugins + "/libmixpanel.so")
        if amplitude { try FileManager.default.copyItem(atPath: try AmplitudeBuild.library(in: dir), toPath: plugins + "/libamplitude.so") }
        return plugins
    }

    /// `analytics-host run` with `integrations` as the settings' integrations object and `events` on stdin.
    static func run(integrations: String, events: [String], isolated: Bool, amplitude: Bool = false, in dir: String) throws -> FixtureBuilder.ProcessOutput {
        let plugins = try pluginsDirectory(in: dir, amplitude: amplitude)
        try #"{"integrations":\#(integrations)}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage"]
        if isolated { arguments.append("--isolate") }
        return try HostBinary.run(arguments, stdin: events.joined(separator: "\n") + "\n", in: dir)
    }

    /// The summary row of a destination: offered, delivered, dropped, skipped, failed, queued, abandoned.
    static func row(_ name: String, in stdout: String) -> [Int]? {
        for line in stdout.split(separator: "\n") {
            let cells = line.split(separator: " ")
            if cells.first.map(String.init) == name, cells.count >= 8 { return Array(cells.dropFirst().prefix(7).compactMap { Int($0) }) }
        }
        return nil
    }
}
