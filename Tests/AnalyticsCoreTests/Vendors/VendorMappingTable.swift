import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// One row of a vendor page's table "Segment's behaviour / ours" (docs/vendors/<vendor>.md):
/// the events that show the behaviour, and what the vendor's fake must have received once
/// `analytics-host run` sent them with the library's default settings. Every row of a table runs
/// in one `run` per isolation mode (rows use their own ids and messageIds, so none sees another's
/// records); a row is one test case, named as in the docs.
struct MappingRow<Fake: Sendable>: Sendable, CustomTestStringConvertible {
    let name: String
    let events: [String]
    let check: @Sendable (MappingRun<Fake>) -> Void

    var testDescription: String { name }
}

/// One `analytics-host run` of every row's events, in-process or in a runner process.
struct MappingRun<Fake: Sendable>: Sendable {
    let fake: Fake
    let status: Int32
    let stdout: String
    let stderr: String

    /// The summary row of `name`: offered, delivered, dropped, skipped, failed, queued, abandoned.
    func row(_ name: String) -> [Int]? { MixpanelBuild.row(name, in: stdout) }

    /// Runs `rows` with a plugins directory holding `library` (as `file`) and `settings` as the
    /// settings' integrations object.
    static func make(fake: Fake, rows: [MappingRow<Fake>], library: String, file: String, integrations: String, isolated: Bool) throws -> MappingRun {
        let dir = makeTempDirectory("vendor-table")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: library, toPath: plugins + "/" + file)
        try #"{"integrations":\#(integrations)}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage", "--quiet"]
        if isolated { arguments.append("--isolate") }
        let events = rows.flatMap(\.events)
        let output = try HostBinary.run(arguments, stdin: events.joined(separator: "\n") + "\n", in: dir)
        return MappingRun(fake: fake, status: output.status, stdout: output.stdout, stderr: output.stderr)
    }
}
