import AnalyticsCore
import Foundation

/// `analytics-host check-settings`: every problem of a settings file, each with its JSON path.
enum CheckSettingsCommand {
    static let help = """
        usage: analytics-host check-settings FILE [--json]

        Validates a settings file in the CDN shape: JSON syntax (with the byte offset), the structure
        of integrations, plan, middlewareSettings and httpConfig, and every destination filter rule
        (operators, transformers, IR strings), naming the JSON path of each problem.

        Exit status: 0 valid; 1 problems found; 2 usage error or unreadable file.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        var args = arguments
        var file: String?
        if let first = args.first, !first.hasPrefix("-") { file = first; args.removeFirst() }
        let opts = try Options(args, valued: [], flags: ["--json"])
        if opts.has("--help") { print(help); return 0 }
        guard let path = file else { throw UsageError("missing the settings FILE") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read settings \(path): \(String(cString: strerror(errno)))")
        }
        var problems: [(path: String, message: String)] = []
        do {
            let json = try JSON(parsing: data)
            problems += SettingsValidator.problems(in: json, source: "file \(path)").map { ($0.path, $0.message) }
            if case .object(let o) = json {
                problems += RoutingRules(settings: o).problems.map { ($0.path, $0.reason) }
            }
        } catch {
            problems.append(("", error.description))
        }
        if opts.has("--json") {
            let list: [JSON] = problems.map { ["path": .string($0.path), "message": .string($0.message)] }
            print(JSON.object(["file": .string(path), "valid": .bool(problems.isEmpty), "problems": .array(list)]).serialized())
        } else if problems.isEmpty {
            print("\(path): valid")
        } else {
            for p in problems { print("\(path): \(p.path.isEmpty ? "" : p.path + ": ")\(p.message)") }
            print("\(problems.count) problem\(problems.count == 1 ? "" : "s")")
        }
        return problems.isEmpty ? 0 : 1
    }
}
