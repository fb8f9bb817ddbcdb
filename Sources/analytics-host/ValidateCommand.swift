import AnalyticsCore
import Foundation

/// `analytics-host validate LIB.so [--settings JSON] [--json] [--timeout SECONDS] [--runner-user=UID[:GID]]`:
/// the checks of `LibraryValidator`, each in a runner process that runs as the user `run`'s runners
/// do (a root host's: 65534 or `--runner-user`); one line per check; exit status 1 on a failure.
enum ValidateCommand {
    static let synopsis = "usage: analytics-host validate LIB.so [--settings JSON] [--json] [--timeout SECONDS] [--runner-user=UID[:GID]]"
    static let help = synopsis + """


        Runs an integration library through the host's checks before you ship it, each check in a
        runner process of its own (analytics-plugin-runner; a crash or a hang is a finding and the
        other checks still run), and prints one line per check: pass, fail or skip, and why.
        The checks: load cost and every symbol resolved (RTLD_NOW); create with {}, with settings of
        unexpected types and with 1 MiB of settings; every event hook with well-formed, malformed
        and random JSON; serialized hooks from two threads in turn; threads or descriptors left
        after destroy; for a library that finishes later, every token completed exactly once. A
        malformed settings schema (AH_EXT_SETTINGS_SCHEMA) fails loading, with the reason.

          --settings JSON   the settings object `create` gets for the checks that need an instance
                            (default {}), e.g. '{"apiKey":"test"}'
          --json            one JSON object per check: check, verdict, detail
          --timeout SECONDS  per check (default 10)
          --runner-user=UID[:GID]  who the checks run as when the host runs as root (default
                            65534:65534, as for `run`'s process-mode runners)

        Exit status: 0 no check failed; 1 a check failed; 2 usage error (or the runner not found).
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") { print(help); return 0 }
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
                guard !arg.hasPrefix("-"), file == nil else {
                    let near = arg.hasPrefix("-") ? Options.closest(to: arg, among: ["--settings", "--json", "--timeout", "--runner-user", "--help"]) : nil
                    throw UsageError("validate: unexpected argument \(arg)" + (near.map { "; did you mean \($0)?" } ?? "") + "\n" + synopsis)
                }
                file = arg
            }
            i += 1
        }
        guard let file else { throw UsageError(synopsis) }
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
