import AnalyticsTestSupport
import AnalyticsCore
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The command explains itself (issue 12 §4): each mistake gets a message that names the thing,
/// the reason and the way out; text from a library cannot forge output or drive the terminal.
@Suite(.serialized) struct CLIMessagesTests {
    @Test func aMissingPluginsDirectoryIsAUsageErrorBeforeInput() throws {
        let dir = makeTempDirectory("msg-plugins")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson")
        let result = try HostBinary.run(["run", "--settings", settings, "--plugins", dir + "/missing", "--storage", dir + "/s"],
                                        stdin: #"{"type":"track","event":"A","userId":"u"}"#, in: dir)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--plugins \(dir)/missing: no such directory; no input was read"), "\(result.stderr)")
        #expect(!result.stderr.contains("cloud-mode"), "not a hint about cloud-mode destinations: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/out.ndjson"))
    }

    @Test func aRefusedLibraryNamesTheFlagAndItsKeySaysSo() throws {
        let dir = makeTempDirectory("msg-refused")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        chmod(plugins + "/libfile.so", 0o666)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let result = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"],
                                        stdin: #"{"type":"track","event":"A","userId":"u"}"#, in: dir)
        #expect(result.status == 3)
        #expect(result.stderr.contains("\(plugins)/libfile.so: refused: library file is writable by group and others (mode 666)"), "\(result.stderr)")
        #expect(result.stderr.contains("--allow-insecure-plugins"), "names the flag: \(result.stderr)")
        #expect(result.stderr.contains(#"warning: settings name "File" but its library \#(plugins)/libfile.so was refused"#), "\(result.stderr)")
        #expect(!result.stderr.contains("cloud-mode"), "\(result.stderr)")
        let allowed = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet", "--allow-insecure-plugins"],
                                         stdin: #"{"type":"track","event":"A","userId":"u"}"#, in: dir)
        #expect(allowed.status == 0, "\(allowed.stderr)")
    }

    /// The library tells both the error handler and the log handler of a failed upload; `run`
    /// writes both to stderr, and says it once.
    @Test func aFailedUploadIsPrintedOnce() throws {
        let dir = makeTempDirectory("msg-upload-once")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let probe = try LoopbackHTTPServer()
        let deadPort = probe.port
        probe.stop()
        try #"{"integrations":{"Segment.io":{"apiKey":"k","apiHost":"http://127.0.0.1:\#(deadPort)/v1"}}}"#
            .write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/s",
                                         "--quiet", "--drain-timeout", "1"],
                                        stdin: #"{"type":"track","event":"E","userId":"u1","messageId":"m-1"}"# + "\n", in: dir)
        #expect(result.status == 4, "kept for a later run: \(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains("upload to http://127.0.0.1:\(deadPort)/v1 failed") }
        #expect(lines.count == 1, "once: \(result.stderr)")
    }

    @Test func anUnknownOptionSuggestsTheClosestOne() throws {
        let cases = [(["run", "--setings", "x"], "--settings"), (["run", "--plugin", "x"], "--plugins"),
                     (["receive", "--prot", "1"], "--port"), (["plugins", "--jsn"], "--json")]
        for (arguments, suggestion) in cases {
            let result = try HostBinary.run(arguments, in: FixtureBuilder.root)
            #expect(result.status == 2)
            #expect(result.stderr.contains("unknown option '\(arguments[1])'; did you mean \(suggestion)?"), "\(result.stderr)")
        }
        let far = try HostBinary.run(["run", "--zzzzzzzz"], in: FixtureBuilder.root)
        #expect(far.status == 2 && far.stderr.contains("unknown option '--zzzzzzzz'\n"), "no far-fetched suggestion: \(far.stderr)")
    }

    @Test func runOnATerminalSaysItReadsStandardInput() throws {
        let dir = makeTempDirectory("msg-stdin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let run = try RunProgressTests.runOnTerminal(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"], in: dir,
                                                     typed: #"{"type":"track","event":"Typed","userId":"u"}"# + "\n")
        #expect(run.status == 0, "\(run.shown)")
        #expect(run.shown.contains("reading events from standard input"), "\(run.shown)")
        #expect(try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8).contains("Typed"))
        // Piped input: no such line.
        let piped = try HostBinary.run(["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"],
                                       stdin: #"{"type":"track","event":"Piped","userId":"u"}"#, in: dir)
        #expect(piped.status == 0 && !piped.stderr.contains("reading events from standard input"))
    }

    @Test func textFromALibraryIsPrintedWithControlCharactersEscaped() throws {
        let dir = makeTempDirectory("msg-escape")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        _ = try FixtureBuilder.library("forger", in: dir + "/plugins")
        try #"{"integrations":{"Forger":{}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins", "--storage", dir + "/s", "--quiet"],
                                        stdin: #"{"type":"track","event":"A","userId":"u"}"#, in: dir)
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains(#"Forger: hello\nanalytics-host: forged line\x1b[31m red"#), "\(result.stderr)")
        #expect(result.stderr.contains(#"bad\rreplaced\x1b]0;title\x07 end"#), "\(result.stderr)")
        #expect(!result.stderr.split(separator: "\n").contains { $0.hasPrefix("analytics-host: forged") }, "no forged line")
        #expect(!result.stderr.utf8.contains(0x1B) && !result.stderr.utf8.contains(0x0D) && !result.stderr.utf8.contains(0x07))
    }
}

/// Log verbosity: -v / --log-level and ANALYTICS_HOST_LOG_LEVEL; debug lines exist and are seen.
@Suite(.serialized) struct CLILogLevelTests {
    @Test func debugLinesAppearWithVerboseAndTheEnvironmentSetsTheDefault() throws {
        let dir = makeTempDirectory("msg-loglevel")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let base = ["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"]
        let event = #"{"type":"track","event":"A","userId":"u"}"#
        let plain = try HostBinary.run(base, stdin: event, in: dir)
        #expect(plain.status == 0 && !plain.stderr.contains("debug:"), "\(plain.stderr)")
        #expect(plain.stderr.contains("info: File: wrote 1 of 1 events"), "info is the default: \(plain.stderr)")
        for flags in [["-v"], ["--log-level", "debug"], ["--log-level=DEBUG"]] {
            let verbose = try HostBinary.run(base + flags, stdin: event, in: dir)
            #expect(verbose.status == 0)
            #expect(verbose.stderr.contains("debug: destinations: File"), "\(flags): \(verbose.stderr)")
        }
        let quiet = try FixtureBuilder.capture("/usr/bin/env", ["ANALYTICS_HOST_LOG_LEVEL=warning", try HostBinary.path()] + base,
                                               stdin: Data(event.utf8), directory: dir)
        #expect(quiet.status == 0 && !quiet.stderr.contains("info:"), "\(quiet.stderr)")
        let overridden = try FixtureBuilder.capture("/usr/bin/env", ["ANALYTICS_HOST_LOG_LEVEL=warning", try HostBinary.path()] + base + ["-v"],
                                                    stdin: Data(event.utf8), directory: dir)
        #expect(overridden.stderr.contains("debug: destinations: File"), "the option wins over the environment")
        let bad = try HostBinary.run(base + ["--log-level", "loud"], stdin: event, in: dir)
        #expect(bad.status == 2 && bad.stderr.contains("--log-level needs debug, info, warning or error, not 'loud'"))
    }
}
