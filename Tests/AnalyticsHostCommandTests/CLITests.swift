import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

@Suite(.serialized) struct CLITests {
    /// A library whose hook never returns: the run ends after --hook-timeout, counts what that
    /// library never got as abandoned, names the library, hook and event, and exits 4.
    @Test func aHungLibraryIsAbandonedReportedAndExitsFour() throws {
        let dir = makeTempDirectory("cli-hang")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let hang = try FixtureBuilder.library("hang", in: plugins)
        let output = dir + "/out.ndjson"
        try #"{"integrations":{"File":{"path":"\#(output)"},"Hang":{}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let input = [
            #"{"type":"track","event":"Before","userId":"u","messageId":"m-before"}"#,
            #"{"type":"track","event":"Hang","userId":"u","messageId":"m-hang"}"#,
            #"{"type":"track","event":"After","userId":"u","messageId":"m-after"}"#,
        ].joined(separator: "\n") + "\n"
        let started = monotonicSeconds()
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", plugins,
                                         "--storage", dir + "/storage", "--hook-timeout", "2", "--quiet"],
                                        stdin: input, in: dir)
        #expect(monotonicSeconds() - started < 10)
        #expect(result.status == 4, "\(result.stderr)")
        let rows = Dictionary(uniqueKeysWithValues: result.stdout.split(separator: "\n").compactMap { line -> (String, [Int])? in
            let cells = line.split(separator: " ")
            guard cells.count == 8, let first = Int(cells[1]) else { return nil }
            return (String(cells[0]), [first] + cells[2...].compactMap { Int($0) })
        })
        // offered, delivered, dropped, skipped, failed, queued, abandoned
        #expect(rows["Hang"] == [3, 1, 0, 0, 0, 0, 2], "\(result.stdout)")
        #expect(rows["File"] == [3, 3, 0, 0, 0, 0, 0])
        #expect(!result.stdout.contains("abandoned: never delivered"), "the legend is in run --help, not after every summary")
        #expect(result.stderr.contains(
            "plugin Hang: library \(hang): track while delivering track \"Hang\" event m-hang did not return within 2.0 s; "
                + "abandoned with 2 events undelivered (counted as abandoned); destroy not called"), "\(result.stderr)")
        #expect(result.stderr.contains("2 events abandoned by a hung library"))
    }

    @Test func theDemoRunsOfflineAndEveryDestinationActs() throws {
        let dir = makeTempDirectory("cli-demo")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        var settings = try String(contentsOfFile: FixtureBuilder.root + "/examples/settings.json", encoding: .utf8)
        settings = settings.replacingOccurrences(of: "../build/demo/file-destination.ndjson", with: dir + "/file.ndjson")
        try settings.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        // The demo is one user's session: --device, as make run.
        let result = try HostBinary.run(["run", "--device", "--settings", dir + "/settings.json", "--plugins", plugins,
                                         "--storage", dir + "/storage", "--input", FixtureBuilder.root + "/examples/events.ndjson",
                                         "--drain-timeout", "0"],
                                        in: dir)
        #expect(result.status == 4, "offline: Segment.io's events are still queued; \(result.stderr)")
        #expect(result.stdout.contains("12 events accepted, 0 rejected"))
        let rows = Dictionary(uniqueKeysWithValues: result.stdout.split(separator: "\n").compactMap { line -> (String, [Int])? in
            let cells = line.split(separator: " ")
            guard cells.count == 8, let first = Int(cells[1]) else { return nil }
            return (String(cells[0]), [first] + cells[2...].compactMap { Int($0) })
        })
        // offered, delivered, dropped, skipped, failed, queued, abandoned
        #expect(rows["File"] == [12, 9, 2, 1, 0, 0, 0])      // Debug dropped by its filter; env=test by the global rule
        #expect(rows["Console"] == [12, 8, 1, 3, 0, 0, 0])   // integrations option and the plan skip it
        let lines = try String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 7, "File writes track/identify/screen/page only")
        // …and says so, so that "delivered 9" and 7 lines do not puzzle anyone.
        #expect(result.stderr.contains(#"File: wrote 7 of 9 events to \#(dir)/file.ndjson; 2 left out by its "types" setting (group 1, alias 1)"#),
                "\(result.stderr)")
        #expect(!lines.contains { $0.contains("Debug Cache Miss") })
        #expect(result.stderr.contains("[analytics] track \"Order Completed\""))
        #expect(!result.stderr.contains("card_last4"), "Console's filter drops the property")
        #expect(result.stderr.contains("\"Braze\" but no integration provides it"))
    }

    @Test func aMalformedLineIsReportedWithItsNumberAndTheRestIsProcessed() throws {
        let dir = makeTempDirectory("cli-malformed")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson")
        let input = """
            {"type":"track","event":"One"}
            {"type":"track","event":
            [1,2]
            {"type":"track","event":""}
            {"type":"track","event":"Two"}
            """
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                        stdin: input, in: dir)
        #expect(result.status == 1)
        #expect(result.stderr.contains("input line 2: invalid JSON at column"))
        #expect(result.stderr.contains("input line 3: not a JSON object"))
        #expect(result.stderr.contains("input line 4: invalid event: track needs a non-empty \"event\" name"))
        #expect(result.stdout.contains("2 events accepted, 3 rejected"))
        let written = try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)
        #expect(written.contains("\"One\"") && written.contains("\"Two\""))
    }

    // A missing plugins directory: a usage error before any input (issue 12 §4), see
    // CLIMessagesTests.aMissingPluginsDirectoryIsAUsageErrorBeforeInput.

    @Test func aBrokenLibraryIsRefusedByNameAndTheGoodOnesDeliver() throws {
        let dir = makeTempDirectory("cli-broken")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try "this is not ELF".write(toFile: plugins + "/libbroken.so", atomically: true, encoding: .utf8)
        chmod(plugins + "/libbroken.so", 0o755)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson")
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                        stdin: #"{"type":"track","event":"Still Delivered"}"#, in: dir)
        #expect(result.status == 3)
        #expect(result.stderr.contains("\(plugins)/libbroken.so: not a loadable shared object"))
        #expect(try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8).contains("Still Delivered"))
    }

    @Test func pluginsJSONListsTheExampleLibrariesWithTheirKeys() throws {
        let dir = makeTempDirectory("cli-plugins")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FileManager.default.copyItem(atPath: FixtureBuilder.root + "/build/plugins/libMetricsIntegration.so", toPath: plugins + "/libmetrics.so")
        try FixtureBuilder.plugin("Plugins/Redact/redact.c", in: plugins, as: "libredact.so")
        try "junk".write(toFile: plugins + "/libjunk.so", atomically: true, encoding: .utf8)
        chmod(plugins + "/libjunk.so", 0o755)
        let result = try HostBinary.run(["plugins", "--plugins", plugins, "--json"], in: dir)
        #expect(result.status == 1, "one library was refused")
        let json = try JSON(parsing: result.stdout)
        #expect(json["hostVersion"] == .string(HostVersion.string))
        let libraries = try #require(json["libraries"]?.arrayValue)
        let loaded = libraries.filter { $0["status"] == "loaded" }
        #expect(Set(loaded.compactMap { $0["key"]?.stringValue }) == ["File", "Console", "Metrics", "Redact"])
        let redact = try #require(loaded.first { $0["key"] == "Redact" })
        #expect(redact["role"] == "whole-settings" && redact["destination"] == false && redact["wholeSettings"] == true)
        let metrics = try #require(loaded.first { $0["key"] == "Metrics" })
        #expect(metrics["language"] == "swift")
        #expect(metrics["toolchain"]?.stringValue?.isEmpty == false)
        #expect(metrics["abiVersion"] == "1.3")
        let file = try #require(loaded.first { $0["key"] == "File" })
        #expect(file["hooks"]?.arrayValue?.contains("flush") == true)
        #expect(file["role"] == "destination" && file["destination"] == true && file["wholeSettings"] == false)
        #expect(file["durable"] == false, "File keeps its events in memory")
        let refused = try #require(libraries.first { $0["status"] == "refused" })
        #expect(refused["reason"]?.stringValue?.hasPrefix("not a loadable shared object") == true)
    }

    /// The walk-through of docs/c-abi.md: build Hello with the documented gcc line, drop it in, see it.
    @Test func theReadmeIntegrationBuildsWithOneGccLineAndLoads() throws {
        let dir = makeTempDirectory("cli-hello")
        try FixtureBuilder.run("/usr/bin/gcc", ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-shared", "-fPIC", "-O2",
                                                "-I", FixtureBuilder.root + "/include", "-o", dir + "/libhello.so",
                                                FixtureBuilder.root + "/Plugins/Hello/hello.c"])
        let listed = try HostBinary.run(["plugins", "--plugins", dir], in: dir)
        #expect(listed.status == 0)
        #expect(listed.stdout.contains("Hello  1.0.0") && listed.stdout.contains("hooks      track flush destroy"))
        #expect(listed.stdout.contains("role       destination (created when the settings' integrations name \"Hello\")"))
        try #"{"integrations":{"Hello":{}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let run = try HostBinary.run(["run", "--device", "--settings", dir + "/settings.json", "--plugins", dir, "--storage", dir + "/s"],
                                     stdin: #"{"type":"track","event":"A"}"# + "\n" + #"{"type":"identify","userId":"u"}"# + "\n"
                                        + #"{"type":"track","event":"B"}"#, in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("hello: 2 track calls so far"))
        // Hello has no identify hook: that call is never queued for it and the summary says skipped.
        let row = (run.stdout + run.stderr).split(separator: "\n").first { $0.hasPrefix("Hello ") }?.split(separator: " ").map(String.init)
        #expect(row.map { Array($0.dropFirst().prefix(4)) } == ["3", "2", "0", "1"], "\(run.stdout)\(run.stderr)")
    }

    @Test func checkSettingsNamesEachProblemByPath() throws {
        let dir = makeTempDirectory("cli-check")
        let good = try HostBinary.run(["check-settings", FixtureBuilder.root + "/examples/settings.json"], in: dir)
        #expect(good.status == 0 && good.stdout.contains("valid"))
        let bad = dir + "/bad.json"
        try #"{"integrations":{"A":true},"middlewareSettings":{"routingRules":[{"matchers":[{"type":"fql","ir":"[\"~\",\"event\",{\"value\":1}]"}],"transformers":[[]]}]}}"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["check-settings", bad], in: dir)
        #expect(result.status == 1)
        #expect(result.stdout.contains("integrations.A"))
        #expect(result.stdout.contains("middlewareSettings.routingRules[0].matchers[0].ir"))
        let missing = try HostBinary.run(["check-settings", dir + "/missing.json"], in: dir)
        #expect(missing.status == 2 && missing.stderr.contains("cannot read settings"))
    }

    @Test func helpAndUsageErrors() throws {
        let dir = makeTempDirectory("cli-help")
        for command in ["run", "plugins", "check-settings"] {
            let help = try HostBinary.run([command, "--help"], in: dir)
            #expect(help.status == 0 && help.stdout.contains("usage: analytics-host \(command)"))
        }
        let unknown = try HostBinary.run(["run", "--bogus"], in: dir)
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown option '--bogus'"))
        let noCommand = try HostBinary.run(["frobnicate"], in: dir)
        #expect(noCommand.status == 2 && noCommand.stderr.contains("unknown command 'frobnicate'"))
        let missing = try HostBinary.run(["run", "--plugins", dir], in: dir)
        #expect(missing.status == 2 && missing.stderr.contains("missing --settings"))
    }

    /// SIGTERM while input is still arriving: the host stops reading, flushes and exits cleanly;
    /// every event it accepted is in the File destination's output.
    @Test func sigtermFlushesWhatWasAccepted() throws {
        let dir = makeTempDirectory("cli-sigterm")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HostBinary.path())
        process.arguments = ["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var lines = ""
        for i in 0..<5_000 { lines += #"{"type":"track","event":"E\#(i)"}"# + "\n" }
        input.fileHandleForWriting.write(Data(lines.utf8))
        // Input stays open: wait until the File destination has written some events, then signal.
        let deadline = monotonicSeconds() + 20
        while monotonicSeconds() < deadline {
            let size = (try? FileManager.default.attributesOfItem(atPath: dir + "/out.ndjson")[.size] as? Int) ?? 0
            if size > 0 { break }
            usleep(2000)
        }
        kill(process.processIdentifier, SIGTERM)
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        _ = errors.fileHandleForReading.readDataToEndOfFile()
        #expect(process.terminationStatus == 0)
        #expect(stdout.contains("(interrupted)"))
        let acceptedText = try #require(stdout.split(separator: "\n").first { $0.contains("events accepted") })
        let accepted = try #require(Int(acceptedText.split(separator: " ")[0]))
        let written = try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(accepted > 0 && accepted <= 5_000)
        #expect(written.count == accepted, "every accepted event reached the File destination")
    }

    /// SIGTERM while Segment.io cannot be reached: every accepted event is kept on disk, and a
    /// second run (server up) uploads each of them exactly once.
    @Test func sigtermKeepsAcceptedEventsForSegmentAcrossARestart() throws {
        let dir = makeTempDirectory("cli-sigterm-segment")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let probe = try LoopbackHTTPServer()
        let deadPort = probe.port
        probe.stop()
        func settings(port: UInt16) throws -> String {
            let path = dir + "/settings-\(port).json"
            try #"{"integrations":{"File":{"path":"\#(dir)/out.ndjson"},"Segment.io":{"apiKey":"k","apiHost":"http://127.0.0.1:\#(port)/v1"}}}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HostBinary.path())
        process.arguments = ["run", "--device", "--settings", try settings(port: deadPort), "--plugins", plugins, "--storage", dir + "/s", "--quiet"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var lines = ""
        for i in 0..<3_000 { lines += #"{"type":"track","event":"E","messageId":"m-\#(i)"}"# + "\n" }
        input.fileHandleForWriting.write(Data(lines.utf8))
        let deadline = monotonicSeconds() + 20
        while monotonicSeconds() < deadline {
            if ((try? FileManager.default.attributesOfItem(atPath: dir + "/out.ndjson")[.size] as? Int) ?? 0) > 0 { break }
            usleep(2000)
        }
        kill(process.processIdentifier, SIGTERM)
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 4, "still queued")
        let acceptedLine = try #require(stdout.split(separator: "\n").first { $0.contains("events accepted") })
        let accepted = try #require(Int(acceptedLine.split(separator: " ")[0]))
        #expect(accepted > 0)
        #expect(stdout.contains("\(accepted) events kept on disk"), "the summary says the events are kept")

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let second = try HostBinary.run(["run", "--device", "--settings", try settings(port: server.port), "--plugins", plugins,
                                         "--storage", dir + "/s", "--input", "/dev/null"], in: dir)
        #expect(second.status == 0, "\(second.stderr)")
        let expected = Set((0..<accepted).map { "m-\($0)" })
        #expect(try server.waitForMessageIds(expected))
        let received = try server.messageIds()
        #expect(Set(received) == expected, "nothing accepted is lost, nothing unaccepted appears")
        #expect(received.count == accepted, "each exactly once")
    }
}
