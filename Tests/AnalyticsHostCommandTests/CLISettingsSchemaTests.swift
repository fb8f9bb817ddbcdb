import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Issue #34's typos, as a user meets them: `check-settings` names each with its "did you mean",
/// `run` refuses a rule it would have applied to every destination, and a library whose settings
/// do not match what it declares is not created and is listed under the summary's problems.
@Suite(.serialized) struct CLISettingsSchemaTests {
    @Test func checkSettingsNamesEachTypoWithDidYouMean() throws {
        let dir = makeTempDirectory("cli-schema-typos")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try #"""
        {"integrations":{"Segment.io":{"apiKey":"k","apiHots":"http://127.0.0.1:9/v1"},
                         "File":{"pth":"\#(dir)/out.ndjson"},"Console":{}},
         "middlewareSettings":{"routingRules":[{"destinatonName":"File","matchers":[{"type":"all","ir":""}],"transformers":[[{"type":"drop"}]]}]}}
        """#.write(toFile: settings, atomically: true, encoding: .utf8)

        let check = try HostBinary.run(["check-settings", settings, "--plugins", plugins], in: dir)
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        let out = check.stdout
        #expect(out.contains(#"integrations.Segment.io.apiHots: warning: unknown key in Segment.io's settings, ignored; did you mean "apiHost"?"#), "\(out)")
        #expect(out.contains(#"middlewareSettings.routingRules[0].destinatonName: unknown key in a routing rule; did you mean "destinationName"?"#), "\(out)")
        #expect(out.contains("middlewareSettings.routingRules[0].destinationName: missing"), "\(out)")
        #expect(out.contains(#"integrations.File.pth: warning: unknown key in File's settings, ignored; did you mean "path"?"#), "\(out)")
        #expect(out.contains("integrations.File.path: missing: required"), "File declares path as required: \(out)")
        #expect(out.contains("3 problems, 2 warnings"), "\(out)")

        // Without --plugins the library's settings are not known: its keys are not judged.
        let plain = try HostBinary.run(["check-settings", settings], in: dir)
        #expect(plain.status == 1 && !plain.stdout.contains("integrations.File.pth"), "\(plain.stdout)")

        // --json carries the severity.
        let json = try HostBinary.run(["check-settings", settings, "--plugins", plugins, "--json"], in: dir)
        let problems = try #require(try JSON(parsing: json.stdout)["problems"]?.arrayValue)
        #expect(problems.contains { $0["path"] == "integrations.Segment.io.apiHots" && $0["severity"] == "warning" })
        #expect(problems.contains { $0["path"] == "middlewareSettings.routingRules[0].destinatonName" && $0["severity"] == "error" })

        // run refuses the rule before reading any input (it would have dropped File's and Console's events).
        let run = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                     stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(#"routingRules[0].destinatonName: unknown key in a routing rule; did you mean "destinationName"?"#))
        #expect(run.stderr.contains(#"warning: settings \#(settings): integrations.Segment.io.apiHots"#), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/s"), "no input was read, nothing stored")
    }

    @Test func warningsAloneAreValidUnlessStrict() throws {
        let dir = makeTempDirectory("cli-schema-strict")
        defer { FixtureBuilder.remove(dir) }
        let settings = dir + "/settings.json"
        try #"{"integrations":{"Segment.io":{"apiKey":"k","apiHots":"x"}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let check = try HostBinary.run(["check-settings", settings], in: dir)
        #expect(check.status == 0 && check.stdout.contains("\(settings): valid (1 warning)"), "\(check.stdout)")
        let strict = try HostBinary.run(["check-settings", settings, "--strict"], in: dir)
        #expect(strict.status == 1, "\(strict.stdout)")
    }

    /// A library's settings are checked before its create, in-process and in process mode: a wrong
    /// type keeps it from being created, with the key and the reason in the summary's problems.
    @Test(arguments: [false, true])
    func aLibraryWhoseSettingsDoNotMatchIsNotCreatedAndListed(isolated: Bool) throws {
        let dir = makeTempDirectory("cli-schema-create")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/out.ndjson","isolation":{"mode":"in-process"}},"Console":{"showPayload":"yes"}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"]
                                            + (isolated ? ["--isolate=Console"] : []),
                                        stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(result.status == 3, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("problems reported by libraries (exit status 3):"), "\(result.stdout)")
        #expect(result.stdout.contains("Console was not created: its settings do not match what it declares: "
                                       + "integrations.Console.showPayload: expected a boolean, found a string"), "\(result.stdout)")
        #expect(!result.stderr.contains("[analytics] track"), "Console never printed a line")
        #expect(try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8).contains("\"E\""), "File still delivers")
    }

    /// A create that fails (File cannot open its path) is listed under problems too.
    @Test func aCreateFailureIsListedUnderProblems() throws {
        let dir = makeTempDirectory("cli-schema-createfail")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try Data().write(to: URL(fileURLWithPath: dir + "/blocker"))
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/blocker/out.ndjson"},"Console":{}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"],
                                        stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(result.status == 3, "\(result.stderr)")
        let listed = result.stdout.split(separator: "\n").first { $0.hasPrefix("  File was not created: ") }
        #expect(listed?.contains("blocker") == true, "\(result.stdout)")
    }

    @Test func writeKeyThatDiffersFromTheSettingsIsRefusedWithTheReason() throws {
        let dir = makeTempDirectory("cli-schema-writekey")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"Segment.io":{"apiKey":"from-settings","apiHost":"http://127.0.0.1:9/v1"},"Console":{}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let refused = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                          "--write-key", "from-command-line"], stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains(#"--write-key from-command-line differs from the apiKey of integrations["Segment.io"]"#), "\(refused.stderr)")
        #expect(refused.stderr.contains("(from-settings)") && refused.stderr.contains("No input was read"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/s"))
        // The same key is fine.
        let agreed = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                         "--write-key", "from-settings", "--drain-timeout", "0", "--quiet"],
                                        stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(agreed.status == 4, "queued for Segment.io, nothing refused: \(agreed.stderr)")
    }

    @Test func anUnusableStorageDirectoryIsSaidInPlainWords() throws {
        let dir = makeTempDirectory("cli-schema-storage")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson")
        try Data().write(to: URL(fileURLWithPath: dir + "/file"))
        let result = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/file/storage"],
                                        stdin: #"{"type":"track","event":"E","userId":"u"}"#, in: dir)
        #expect(result.status == 2)
        #expect(result.stderr.contains("cannot create storage directory \(dir)/file/storage: \(dir)/file is not a directory"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"))
    }

    @Test func jsonSyntaxErrorsAreLineAndColumn() throws {
        let dir = makeTempDirectory("cli-schema-linecol")
        defer { FixtureBuilder.remove(dir) }
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"x"},}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let check = try HostBinary.run(["check-settings", settings], in: dir)
        #expect(check.status == 1)
        #expect(check.stdout.contains("invalid JSON at line 1, column 38"), "a one-line file too: \(check.stdout)")
        #expect(!check.stdout.contains("byte"))
        let json = try HostBinary.run(["check-settings", settings, "--json"], in: dir)
        let problem = try #require(try JSON(parsing: json.stdout)["problems"]?[0])
        #expect(problem["line"] == 1 && problem["column"] == 38, "\(json.stdout)")
    }

    @Test func commandsAndTheirHelpSayWhatAUserLooksFor() throws {
        let dir = makeTempDirectory("cli-schema-help")
        defer { FixtureBuilder.remove(dir) }
        let usage = try HostBinary.run(["--help"], in: dir)
        #expect(usage.stdout.contains("  validate "), "validate is listed: \(usage.stdout)")
        let validate = try HostBinary.run(["validate", "--help"], in: dir)
        #expect(validate.status == 0 && validate.stdout.hasPrefix("usage: analytics-host validate LIB.so"), "\(validate.stderr)")
        #expect(validate.stdout.contains("Exit status"))
        let typo = try HostBinary.run(["rn"], in: dir)
        #expect(typo.status == 2 && typo.stderr.contains("unknown command 'rn'; did you mean 'run'?"), "\(typo.stderr)")
        let runHelp = try HostBinary.run(["run", "--help"], in: dir).stdout
        let synopsis = runHelp.components(separatedBy: "\n\n").first ?? ""
        #expect(synopsis.contains("[--runner-user=UID[:GID]]"), "\(synopsis)")
        #expect(runHelp.contains("offered: this run's events"), "the summary's columns are explained in run --help")
        let missing = try HostBinary.run(["plugins", "--plugins", dir + "/missing"], in: dir)
        #expect(missing.status == 2 && missing.stdout.contains("\(dir)/missing: cannot be listed: plugins directory does not exist"), "\(missing.stdout)")
        #expect(!missing.stdout.contains("refused"), "a missing directory is not a refused library: \(missing.stdout)")
    }

    /// `plugins` lists what each library declares, like gst-inspect's properties.
    @Test func pluginsListsEachLibrarysSettings() throws {
        let dir = makeTempDirectory("cli-schema-plugins")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let listed = try HostBinary.run(["plugins", "--plugins", plugins], in: dir)
        #expect(listed.status == 0)
        #expect(listed.stdout.contains(#"showPayload  boolean  default false: append the whole event JSON to each line"#), "\(listed.stdout)")
        #expect(listed.stdout.contains("path   string  required: the file to append to"), "\(listed.stdout)")
        let json = try HostBinary.run(["plugins", "--plugins", plugins, "--json"], in: dir)
        let console = try #require(try JSON(parsing: json.stdout)["libraries"]?.arrayValue?.first { $0["key"] == "Console" })
        #expect(console["settings"]?[0] == ["name": "prefix", "types": ["string"], "required": false, "default": "[analytics]",
                                            "description": "printed first on every line"])
    }
}
