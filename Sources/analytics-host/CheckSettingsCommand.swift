import AnalyticsCore
import Foundation

/// `analytics-host check-settings`: every problem of a settings file, each with its JSON path.
enum CheckSettingsCommand {
    static let help = """
        usage: analytics-host check-settings FILE [--json]

        Validates a settings file in the CDN shape with the same checks `run` applies before it
        starts: JSON syntax (line and column), the structure of integrations, plan and
        middlewareSettings, the Segment.io apiHost and the types and ranges of its httpConfig, and
        every destination filter rule (operators, transformers, IR strings). Each problem names its
        JSON path; a rule problem also names the destination, the rule and matcher index and the
        position inside the IR.

        Exit status: 0 valid; 1 problems found; 2 usage error or unreadable file.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        var args = arguments
        var file: String?
        if let first = args.first, !first.hasPrefix("-") { file = first; args.removeFirst() }
        let opts = try Options(args, valued: [], flags: ["--json"])
        if opts.has("--help") { print(help); return 0 }
        guard let path = file else { throw UsageError("missing the settings FILE") }
        let problems = try HostSetup.readSettings(path: path).problems
        if opts.has("--json") {
            let list: [JSON] = problems.map { ["path": .string($0.path), "message": .string($0.message)] }
            print(JSON.object(["file": .string(path), "valid": .bool(problems.isEmpty), "problems": .array(list)]).serialized())
        } else if problems.isEmpty {
            print("\(path): valid")
        } else {
            for p in problems { print(TerminalText.escaped("\(path): \(p.path.isEmpty ? "" : p.path + ": ")\(p.message)")) }
            print("\(problems.count) problem\(problems.count == 1 ? "" : "s")")
        }
        return problems.isEmpty ? 0 : 1
    }
}
