import AnalyticsCore

/// A user mistake on the command line: printed without a stack trace, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// `--name value` and `--flag` options after a command name; nothing else is accepted.
struct Options {
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// Reads `arguments`, knowing which names take a value and which are flags.
    init(_ arguments: [String], valued: Set<String>, flags known: Set<String>) throws {
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            var name = arg
            var inline: String?
            if let eq = arg.firstIndex(of: "="), arg.hasPrefix("--") {
                name = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            if valued.contains(name) {
                if let inline { values[name] = inline } else {
                    guard i + 1 < arguments.count else { throw UsageError("\(name) needs a value") }
                    values[name] = arguments[i + 1]
                    i += 1
                }
            } else if known.contains(name), inline == nil {
                flags.insert(name)
            } else if name == "-h" || name == "--help" {
                flags.insert("--help")
            } else {
                let suggestion = Self.closest(to: name, among: valued.union(known).union(["--help"]))
                throw UsageError("unknown option '\(arg)'" + (suggestion.map { "; did you mean \($0)?" } ?? ""))
            }
            i += 1
        }
    }

    /// The known option nearest to a mistyped one ("did you mean", `NearestName`).
    static func closest(to name: String, among options: Set<String>) -> String? {
        guard name.hasPrefix("-") else { return nil }
        return NearestName.suggestion(for: name, among: options.sorted())
    }

    subscript(_ name: String) -> String? { values[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func required(_ name: String) throws -> String {
        guard let v = values[name], !v.isEmpty else { throw UsageError("missing \(name)") }
        return v
    }
}
