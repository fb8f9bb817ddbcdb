import AnalyticsCore
import Foundation

/// `analytics-host validate LIB.so [--settings JSON] [--json] [--timeout SECONDS] [--runner-user=UID[:GID]]`:
/// the checks of `LibraryValidator`, each in a runner process that runs as the user `run`'s runners
/// do (a root host's: 65534 or `--runner-user`); one line per check; exit status 1 on a failure.
enum ValidateCommand {
    static func main(_ arguments: [String]) throws -> Int32 {
        var file: String?
        var settings: JSONObject = [:]
        var json = false
        var timeout = 10.0
        var user = RunnerUser.nobody
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            switch arg {
            case "--json": json = true
            case _ where arg.hasPrefix("--runner-user="): user = try IsolationOptions.runnerUser(arg) ?? user
            case "--settings", "--timeout":
                guard i + 1 < arguments.count else { throw UsageError("validate: \(arg) needs a value") }
                i += 1
                if arg == "--timeout" {
                    guard let t = Double(arguments[i]), t > 0 else { throw UsageError("validate: --timeout \(arguments[i]) is not a positive number of seconds") }
                    timeout = t
                } else {
                    guard let object = (try? JSON(parsing: Array(arguments[i].utf8)))?.objectValue else {
                        throw UsageError("validate: --settings is not a JSON object: \(arguments[i])")
                    }
                    settings = object
                }
            default:
                guard !arg.hasPrefix("-"), file == nil else { throw UsageError("validate: unexpected argument \(arg)\nusage: analytics-host validate LIB.so [--settings JSON] [--json] [--timeout SECONDS] [--runner-user=UID[:GID]]") }
                file = arg
            }
            i += 1
        }
        guard let file else { throw UsageError("usage: analytics-host validate LIB.so [--settings JSON] [--json] [--timeout SECONDS] [--runner-user=UID[:GID]]") }
        guard let runner = PluginRunnerLocator.find() else { throw UsageError("validate: \(PluginRunnerLocator.executableName) not found next to analytics-host") }
        let path = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
        let findings = LibraryValidator.validate(file: path, settings: settings, runner: runner, timeout: timeout, user: user)
        for f in findings {
            if json {
                print(JSON.object(["check": .string(f.check), "verdict": .string(f.verdict.rawValue), "detail": .string(f.detail)]).serialized())
            } else {
                print("\(f.verdict.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0)) \(f.check): \(f.detail)")
            }
        }
        return findings.contains { $0.verdict == .fail } ? 1 : 0
    }
}
