import AnalyticsCore
import Foundation

/// The `analytics-host` binary, run the way a user runs it.
public enum HostBinary {
    public static func path() throws -> String { try BuiltExecutable.path("analytics-host") }

    public static func run(_ arguments: [String], stdin: String? = nil, in directory: String) throws -> FixtureBuilder.ProcessOutput {
        try FixtureBuilder.capture(try path(), arguments, stdin: stdin.map { Data($0.utf8) }, directory: directory)
    }

    /// A plugins directory with the File and Console examples built by the `make plugins` command line.
    public static func pluginsDirectory(in dir: String) throws -> String {
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FixtureBuilder.plugin("Plugins/File/file.c", in: plugins, as: "libfile.so")
        try FixtureBuilder.plugin("Plugins/Console/console.c", in: plugins, as: "libconsole.so")
        return plugins
    }

    /// Settings enabling File (writing to `output`) and Console, without Segment.io (offline tests).
    public static func settings(in dir: String, output: String, console: Bool = true) throws -> String {
        let path = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(output)"}\#(console ? #","Console":{}"# : "")}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
