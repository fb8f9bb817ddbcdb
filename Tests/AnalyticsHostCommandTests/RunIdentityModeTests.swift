import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// `run`'s identity modes through a real loaded library (File, which writes every event it gets),
/// in-process and in a runner process (`--isolate`): server mode (the default) hands every
/// destination each line's own ids and context plus `context.library`; `--device` is the one stored
/// user and the machine's context. Missing messageIds are derived from the input.
@Suite struct RunIdentityModeTests {
    /// Two people interleaved, a line with no id, a line with its own context.
    static let input = [
        #"{"type":"identify","userId":"alice","anonymousId":"anon-alice","traits":{"plan":"pro","email":"alice@example.com"}}"#,
        #"{"type":"track","event":"Viewed","anonymousId":"anon-bob","properties":{"n":1}}"#,
        #"{"type":"track","event":"Bought","userId":"alice"}"#,
        #"{"type":"track","event":"Nobody"}"#,
        #"{"type":"identify","userId":"bob","anonymousId":"anon-bob","traits":{"plan":"free"}}"#,
        #"{"type":"page","name":"Home","anonymousId":"anon-carol","context":{"ip":"203.0.113.7","os":{"name":"iOS","version":"17.1"},"locale":"fr-FR"}}"#,
        #"{"type":"track","event":"Viewed","anonymousId":"anon-bob","properties":{"n":1}}"#,
        #"{"type":"track","event":"Given","userId":"dora","messageId":"m-given"}"#,
    ]

    struct Run {
        let result: FixtureBuilder.ProcessOutput
        let written: [JSON]
        let storage: String
    }

    static func run(_ lines: [String], extra: [String] = [], isolated: Bool, in dir: String, name: String = "out") throws -> Run {
        let plugins = dir + "/plugins"
        if !FileManager.default.fileExists(atPath: plugins + "/libfile.so") {
            try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
            try FixtureBuilder.plugin("Plugins/File/file.c", in: plugins, as: "libfile.so")
        }
        let output = dir + "/\(name).ndjson"
        let settings = dir + "/\(name)-settings.json"
        // In process mode File (jailed, as nobody) may write there and nowhere else.
        let grant = isolated ? #","isolation":{"allow":["files:\#(dir)"]}"# : ""
        try #"{"integrations":{"File":{"path":"\#(output)"\#(grant)}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let storage = dir + "/\(name)-storage"
        var arguments = ["run", "--settings", settings, "--plugins", plugins, "--storage", storage, "--quiet"] + extra
        if isolated {
            arguments.append("--isolate")
            makeRunnerWritable(dir)  // File, jailed as nobody, writes its output there
        }
        let result = try HostBinary.run(arguments, stdin: lines.joined(separator: "\n") + "\n", in: dir)
        return Run(result: result, written: readJSONLines(output), storage: storage)
    }

    @Test(arguments: [false, true]) func serverModeKeepsEveryLinesOwnIdsAndRejectsOneWithout(isolated: Bool) throws {
        let dir = makeTempDirectory("run-identity")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let run = try Self.run(Self.input, isolated: isolated, in: dir)
        #expect(run.result.status == 1, "a line was rejected: \(run.result.stdout)\n\(run.result.stderr)")
        #expect(run.result.stderr.contains("input line 4: invalid event: track has neither a userId nor an anonymousId"), "\(run.result.stderr)")
        #expect(run.result.stdout.contains("7 events accepted, 1 rejected"), "\(run.result.stdout)")
        let sent = Self.input.enumerated().filter { $0.offset != 3 }.map { try! JSON(parsing: $0.element) }
        #expect(run.written.count == sent.count, "\(run.result.stderr)")
        for (line, got) in zip(sent, run.written) {
            #expect(got["userId"] == line["userId"] && got["anonymousId"] == line["anonymousId"], "each event carries exactly its own ids: \(got)")
            #expect(got["traits"] == line["traits"], "no traits of another event: \(got)")
        }
        #expect(!FileManager.default.fileExists(atPath: run.storage + "/user.json"), "server mode stores no user")
    }

    @Test(arguments: [false, true]) func serverModeAddsNoHostContextAndDeviceModeDoes(isolated: Bool) throws {
        let dir = makeTempDirectory("run-context")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try Self.run(Self.input, isolated: isolated, in: dir)
        let library: JSON = ["name": "analytics-host", "version": .string(HostVersion.string)]
        for got in server.written {
            let context = try #require(got["context"]?.objectValue)
            #expect(context["library"] == library)
            if got["type"] == "page" {
                #expect(context.keys == ["ip", "os", "locale", "library"], "the line's own context, in its order, then library")
                #expect(context["os"] == ["name": "iOS", "version": "17.1"] && context["locale"] == "fr-FR" && context["ip"] == "203.0.113.7")
            } else {
                #expect(context.keys == ["library"], "no os, device, locale or timezone of the host: \(context)")
            }
        }
        // --device: the stored user fills the lines without ids, and the machine's context is added.
        let device = try Self.run(Self.input, extra: ["--device"], isolated: isolated, in: dir, name: "device")
        #expect(device.result.status == 0, "\(device.result.stdout)\n\(device.result.stderr)")
        #expect(device.written.count == Self.input.count)
        let nobody = try #require(device.written.first { $0["event"] == "Nobody" })
        #expect(nobody["userId"] == "alice", "device mode: the stored user")
        #expect(nobody["context"]?["os"]?["name"] == "Linux" && nobody["context"]?["device"]?["type"] == "linux")
        #expect(nobody["context"]?["locale"] != nil && nobody["context"]?["timezone"] != nil)
        #expect(FileManager.default.fileExists(atPath: device.storage + "/user.json"))
    }

    @Test func theSameInputRunTwiceGivesTheSameMessageIds() throws {
        let dir = makeTempDirectory("run-ids")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try Self.run(Self.input, isolated: false, in: dir, name: "first")
        let second = try Self.run(Self.input, isolated: false, in: dir, name: "second")
        let ids = first.written.compactMap { $0["messageId"]?.stringValue }
        #expect(ids.count == first.written.count)
        #expect(ids == second.written.compactMap { $0["messageId"]?.stringValue }, "a re-run does not double-count")
        #expect(Set(ids).count == ids.count, "the two identical Viewed lines are different events")
        #expect(ids.last == "m-given", "a line's own messageId is kept")
        for id in ids.dropLast() {
            #expect(id.count == 36 && id.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12], "UUID-shaped: \(id)")
        }
        // The same events after other lines are other events.
        let shifted = try Self.run([#"{"type":"track","event":"First","userId":"x"}"#] + Self.input, isolated: false, in: dir, name: "shifted")
        let shiftedIds = shifted.written.compactMap { $0["messageId"]?.stringValue }.dropFirst()
        #expect(Set(shiftedIds.dropLast()).isDisjoint(with: Set(ids.dropLast())))
    }
}
