import AnalyticsCore
import Foundation

let usage = """
    usage: analytics-host <command> [options]

    commands:
      run             send newline-delimited JSON events through every destination
      plugins         list the integration libraries in a directory (like gst-inspect)
      check-settings  validate a settings file (and, with --plugins, each library's own settings)
      validate        run an integration library through the host's checks before shipping it
      receive         a local Segment-compatible collector: what would be uploaded, as NDJSON

    `analytics-host <command> --help` describes each command; `analytics-host --version` prints
    the version. The manual: man analytics-host.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "--help" : arguments.removeFirst()
do {
    let status: Int32
    switch command {
    case "run": status = try RunCommand.main(arguments)
    case "plugins": status = try PluginsCommand.main(arguments)
    case "check-settings": status = try CheckSettingsCommand.main(arguments)
    case "receive": status = try ReceiveCommand.main(arguments)
    case "validate": status = try ValidateCommand.main(arguments)
    case "--version", "version": print("analytics-host \(HostVersion.string)"); status = 0
    case "-h", "--help", "help": print(usage); status = 0
    default:
        let commands = ["run", "plugins", "check-settings", "validate", "receive", "help", "version"]
        let near = NearestName.suggestion(for: command.hasPrefix("--") ? String(command.dropFirst(2)) : command, among: commands)
        throw UsageError("unknown command '\(command)'" + (near.map { "; did you mean '\($0)'?" } ?? "") + "\n\(usage)")
    }
    exit(status)
} catch let error as UsageError {
    // Line breaks are the message's own (usage text); other control bytes come from input.
    let text = "\(error)".split(separator: "\n", omittingEmptySubsequences: false).map { TerminalText.escaped(String($0)) }
    FileHandle.standardError.write(Data("analytics-host: \(text.joined(separator: "\n"))\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("analytics-host: \(TerminalText.escaped("\(error)"))\n".utf8))
    exit(2)
}
