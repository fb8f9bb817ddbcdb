import AnalyticsCore
import Foundation

/// `analytics-host check-settings`: every problem of a settings file, each with its JSON path.
enum CheckSettingsCommand {
    static let help = """
        usage: analytics-host check-settings FILE [--plugins DIR] [--strict] [--json]

        Validates a settings file in the CDN shape with the same checks `run` applies before it
        starts: JSON syntax (line and column), the structure of integrations, plan and
        middlewareSettings, the Segment.io apiHost and the types and ranges of its httpConfig, and
        every destination filter rule (operators, transformers, IR strings). Each problem names its
        JSON path; a rule problem also names the destination, the rule and matcher index and the
        position inside the IR.

        It also knows the schema of what the host reads — the top level, Segment.io's settings and
        httpConfig, the tracking plan, each destination's "durable" and "isolation", routing rules —
        and, with --plugins, each library's own settings as the library declares them (`plugins`
        lists them): a setting of the wrong type or a required one missing is an error.
          - A key nobody reads is a WARNING with the nearest known key ("did you mean"): it changes
            nothing, its default applies (`apiHots` in Segment.io's settings uploads to the default
            api.segment.io).
          - In a routing rule an unknown key is an ERROR, and so is a rule without destinationName
            (a misspelled destinationName would apply the rule to every destination).

          --plugins DIR  the integration libraries (as for `run`): check each destination's
                         settings against the schema its library declares; `run` does the same
                         before it creates each library
          --strict       warnings count as problems (exit status 1)
          --json         one JSON object: file, valid, problems [{path, message, severity, line?,
                         column?}] (line and column for a JSON syntax error)

        Exit status: 0 valid (warnings may be listed); 1 errors found (or, with --strict, warnings);
        2 usage error, unreadable file or unusable --plugins directory.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        var args: [String] = []
        var file: String?
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            if arg == "--plugins", i + 1 < arguments.count {
                args += [arg, arguments[i + 1]]
                i += 2
                continue
            }
            if !arg.hasPrefix("-"), file == nil { file = arg } else { args.append(arg) }
            i += 1
        }
        let opts = try Options(args, valued: ["--plugins"], flags: ["--json", "--strict"])
        if opts.has("--help") { print(help); return 0 }
        guard let path = file else { throw UsageError("missing the settings FILE\nusage: analytics-host check-settings FILE [--plugins DIR] [--strict] [--json]") }
        let schemas = try opts["--plugins"].map(librarySchemas) ?? [:]
        let settings = try HostSetup.readSettings(path: path, libraries: schemas)
        let errors = settings.errors, warnings = settings.warnings
        let failed = !errors.isEmpty || (opts.has("--strict") && !warnings.isEmpty)
        if opts.has("--json") {
            let list: [JSON] = settings.problems.map { p in
                var o: JSONObject = ["path": .string(p.path), "message": .string(p.message), "severity": .string(p.severity.rawValue)]
                if let syntax = settings.syntaxError {
                    o["line"] = .number(JSONNumber(syntax.line))
                    o["column"] = .number(JSONNumber(syntax.column))
                }
                return .object(o)
            }
            print(JSON.object(["file": .string(path), "valid": .bool(!failed), "problems": .array(list)]).serialized())
            return failed ? 1 : 0
        }
        for p in errors + warnings {
            print(TerminalText.escaped("\(path): \(p.path.isEmpty ? "" : p.path + ": ")\(p.isWarning ? "warning: " : "")\(p.message)"))
        }
        let warned = warnings.isEmpty ? "" : "\(warnings.count) warning\(warnings.count == 1 ? "" : "s")"
        if !errors.isEmpty {
            print("\(errors.count) problem\(errors.count == 1 ? "" : "s")" + (warned.isEmpty ? "" : ", " + warned))
        } else {
            print("\(path): valid" + (warned.isEmpty ? "" : " (\(warned)\(opts.has("--strict") ? ", which --strict counts as problems" : ""))"))
        }
        return failed ? 1 : 0
    }

    /// The settings schemas the libraries of `directory` declare, by key (a library that
    /// declares none is not checked); the directory must be usable, as for `run`.
    static func librarySchemas(_ directory: String) throws -> [String: SettingsSchema] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("--plugins \(directory): \(FileManager.default.fileExists(atPath: directory) ? "not a directory" : "no such directory")")
        }
        let scan = PluginsCommand.Scan(directory: directory, allowInsecure: false, user: .nobody)
        for problem in scan.problems {
            FileHandle.standardError.write(Data("analytics-host: note: \(TerminalText.escaped(problem.description)) (its settings are not checked)\n".utf8))
        }
        var schemas: [String: SettingsSchema] = [:]
        for library in scan.libraries { if let schema = library.settingsSchema { schemas[library.key] = schema } }
        return schemas
    }
}
