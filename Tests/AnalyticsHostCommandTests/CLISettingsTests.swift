import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `run` and `check-settings` share one validator: what one calls a problem the other does too,
/// and `run` refuses settings that do not validate before it reads any input.
@Suite(.serialized) struct CLISettingsTests {
    /// Wrong httpConfig types, a plan entry that is not an object, and a filter rule for File whose
    /// IR does not compile.
    static func invalidSettings(output: String) -> String {
        #"""
        {"integrations":{"File":{"path":"\#(output)"},
          "Segment.io":{"apiKey":"k","apiHost":"http://127.0.0.1:9/v1",
            "httpConfig":{"backoffConfig":{"enabled":"yes","maxRetryCount":"many"},"rateLimitConfig":[]}}},
         "plan":{"track":{"Order Completed":true}},
         "middlewareSettings":{"routingRules":[
           {"destinationName":"File","matchers":[{"type":"all","ir":""},{"type":"fql","ir":"[\"=\",\"event\",[\"frobnicate\",\"x\"]]"}],
            "transformers":[[],[{"type":"drop"}]]}]}}
        """#
    }

    @Test func checkSettingsAndRunFindTheSameProblemsAndRunStopsBeforeReadingInput() throws {
        let dir = makeTempDirectory("cli-settings-invalid")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try Self.invalidSettings(output: dir + "/out.ndjson").write(toFile: settings, atomically: true, encoding: .utf8)

        let check = try HostBinary.run(["check-settings", settings], in: dir)
        #expect(check.status == 1)
        let listed = check.stdout.split(separator: "\n").filter { $0.hasPrefix(settings + ": ") }.map { $0.dropFirst(settings.count + 2) }
        #expect(listed.contains { $0.hasPrefix("integrations.Segment.io.httpConfig.backoffConfig.enabled: expected a boolean") })
        #expect(listed.contains { $0.hasPrefix("integrations.Segment.io.httpConfig.backoffConfig.maxRetryCount: expected a number") })
        #expect(listed.contains { $0.hasPrefix("integrations.Segment.io.httpConfig.rateLimitConfig: expected an object") })
        #expect(listed.contains { $0.hasPrefix("plan.track.Order Completed: expected an object") })
        // The rule problem names destination, rule and matcher index, and the position in the IR.
        let rule = try #require(listed.first { $0.hasPrefix("middlewareSettings.routingRules[0].matchers[1].ir") })
        #expect(rule.contains(#"rule 0 for destination "File", matcher 1"#), "\(rule)")
        #expect(rule.contains("ir[2]"), "\(rule)")

        let run = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                     stdin: #"{"type":"track","event":"E"}"#, in: dir)
        #expect(run.status == 2, "\(run.stderr)")
        for problem in listed {
            #expect(run.stderr.contains("settings \(settings): \(problem)"), "run reports \(problem)")
        }
        #expect(run.stderr.contains("do not validate (\(listed.count) problems); no input was read"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out.ndjson"), "no destination was created")
        #expect(!FileManager.default.fileExists(atPath: dir + "/s"), "no storage was created")
    }

    @Test func allowInvalidSettingsRunsWithTheFallbacks() throws {
        let dir = makeTempDirectory("cli-settings-allow")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        // Only a broken filter rule for File: with the escape, File fails closed, Console delivers.
        try #"""
        {"integrations":{"File":{"path":"\#(dir)/out.ndjson"},"Console":{}},
         "middlewareSettings":{"routingRules":[{"destinationName":"File","matchers":[{"type":"fql","ir":"[\"~\"]"}],"transformers":[[]]}]}}
        """#.write(toFile: settings, atomically: true, encoding: .utf8)
        let refused = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s"],
                                         stdin: #"{"type":"track","event":"E"}"#, in: dir)
        #expect(refused.status == 2)
        let run = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                      "--allow-invalid-settings"], stdin: #"{"type":"track","event":"E"}"#, in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("warning: settings \(settings): middlewareSettings.routingRules[0].matchers[0].ir"))
        #expect(run.stderr.contains("[analytics] track \"E\""), "Console still delivers")
        let written = (try? String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)) ?? ""
        #expect(written.isEmpty, "File fails closed behind its broken rule")
    }

    @Test func syntaxErrorsNameLineAndColumn() throws {
        let dir = makeTempDirectory("cli-settings-syntax")
        let settings = dir + "/settings.json"
        try "{\n  \"integrations\": {\n    \"File\": {,}\n  }\n}\n".write(toFile: settings, atomically: true, encoding: .utf8)
        let check = try HostBinary.run(["check-settings", settings], in: dir)
        #expect(check.status == 1)
        #expect(check.stdout.contains("invalid JSON at line 3, column 14"), "\(check.stdout)")
        let run = try HostBinary.run(["run", "--settings", settings, "--plugins", dir, "--storage", dir + "/s"], stdin: "", in: dir)
        #expect(run.status == 2)
        #expect(run.stderr.contains("invalid JSON at line 3, column 14"), "\(run.stderr)")
    }

    @Test func checkSettingsRefusesADirectory() throws {
        let dir = makeTempDirectory("cli-settings-dir")
        let check = try HostBinary.run(["check-settings", dir], in: dir)
        #expect(check.status == 2 && check.stderr.contains("is a directory"), "\(check.stderr)")
    }

    /// Relative paths in a settings file are relative to the file, wherever the command starts.
    @Test func relativePathsResolveAgainstTheSettingsFilesDirectory() throws {
        let dir = makeTempDirectory("cli-settings-relative")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FileManager.default.createDirectory(atPath: dir + "/conf/data", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
        try #"{"integrations":{"File":{"path":"data/out.ndjson"}}}"#.write(toFile: dir + "/conf/settings.json", atomically: true, encoding: .utf8)
        let run = try HostBinary.run(["run", "--device", "--settings", "../conf/settings.json", "--plugins", plugins, "--storage", dir + "/s"],
                                     stdin: #"{"type":"track","event":"Relative"}"#, in: dir + "/elsewhere")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try String(contentsOfFile: dir + "/conf/data/out.ndjson", encoding: .utf8).contains("Relative"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/elsewhere/data"))
    }

    @Test func settingsPathConventionLeavesAbsoluteAndOtherKeysAlone() {
        let settings: JSONObject = ["integrations": ["A": ["path": "x/y.json", "summaryPath": "./s.json", "name": "n.json",
                                                          "other": "/abs"],
                                                    "B": ["path": "/abs/p", "homePath": "~/h"], "C": true]]
        let out = SettingsFilePaths.resolve(settings, relativeTo: "/etc/app")
        #expect(out["integrations"]?["A"] == ["path": "/etc/app/x/y.json", "summaryPath": "/etc/app/s.json", "name": "n.json", "other": "/abs"])
        #expect(out["integrations"]?["B"] == settings["integrations"]?["B"])
        #expect(out["integrations"]?["C"] == true)
    }
}
