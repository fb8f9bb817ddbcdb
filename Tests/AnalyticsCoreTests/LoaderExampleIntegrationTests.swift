import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The example integrations of `Plugins/`, built with the `make plugins` command line and driven
/// through the real loader (File) or a C host in a child process (Console, which writes stderr).
@Suite struct LoaderExampleIntegrationTests {
    func lines(of path: String) throws -> [Substring] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
    }

    @Test func fileWritesOneNDJSONLinePerEventOfTheChosenTypes() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))
        #expect(library.info.key == "File")
        #expect(library.info.hooks.names == ["identify", "track", "screen", "group", "alias", "flush", "update", "destroy", "lifecycle"])

        let output = dir + "/events.ndjson"
        let instance = try library.makeInstance(
            settings: ["path": .string(output), "types": ["track", "identify", "page"]],
            services: RecordingHost().services)
        let events: [Event] = [
            .make(.track, ["event": "Order Completed", "properties": ["total": 30.5, "note": "two\nlines é 😀"]]),
            .make(.screen, ["name": "Filtered out"]),
            .make(.identify, ["userId": "u-1", "traits": ["plan": "pro"]]),
            .make(.page, ["name": "Pricing"]),
            .make(.group, ["groupId": "filtered"]),
        ]
        for event in events { #expect(instance.deliver(event) == .ok) }
        #expect(instance.flush() == .ok)

        let written = try lines(of: output)
        #expect(written.count == 4 && written.last == "", "three lines, each ending in a newline")
        let parsed = try written.dropLast().map { try JSON(parsing: String($0)) }
        #expect(parsed == [events[0], events[2], events[3]].map { JSON.object($0.payload) })
    }

    @Test func fileFollowsSettingsUpdatesAndFlushesOnDestroy() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))
        let first = dir + "/first.ndjson", second = dir + "/second.ndjson"
        let instance = try library.makeInstance(settings: ["path": .string(first)], services: RecordingHost().services)
        #expect(instance.deliver(.make(.alias, ["userId": "a", "previousId": "b"])) == .ok)
        #expect(instance.update(settings: ["path": .string(second), "types": ["track"]], kind: .refresh) == .ok)
        #expect(try lines(of: first).count == 2, "switching files flushes the old one")
        #expect(instance.deliver(.make(.alias, ["userId": "c", "previousId": "d"])) == .ok)
        #expect(instance.deliver(.make(.track, ["event": "Kept"])) == .ok)
        #expect(instance.update(settings: ["types": ["track"]], kind: .refresh)
                == .permanent("File: settings need a non-empty \"path\" string"))
        instance.destroy()
        let kept = try lines(of: second)
        #expect(kept.count == 2)
        #expect(try JSON(parsing: String(kept[0]))["event"] == "Kept")
    }

    @Test(arguments: [
        (JSON.object(["types": ["track"]]), "File: settings need a non-empty \"path\" string"),
        (JSON.object(["path": "/tmp/x.ndjson", "types": ["trak"]]), "File: unknown event type \"trak\" in \"types\""),
        (JSON.object(["path": "/tmp/x.ndjson", "types": "track"]), "File: \"types\" must be an array of event type names"),
        (JSON.object(["path": "/proc/self/environ/x.ndjson"]), "File: cannot open /proc/self/environ/x.ndjson: Not a directory"),
    ])
    func fileRefusesBadSettingsWithAReason(settings: JSON, message: String) throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.plugin("Plugins/File/file.c", in: dir, as: "libfile.so"))
        do {
            _ = try library.makeInstance(settings: settings.objectValue!, services: RecordingHost().services)
            Issue.record("create should fail")
        } catch {
            #expect(error.reason == .createFailed(key: "File", message: message))
        }
    }

    @Test func consolePrintsOneReadableLinePerEventOnStderr() throws {
        let dir = try FixtureBuilder.makeDirectory()
        defer { FixtureBuilder.remove(dir) }
        let library = try FixtureBuilder.plugin("Plugins/Console/console.c", in: dir, as: "libconsole.so")
        #expect(try PluginLoader().load(file: library).info.key == "Console")
        let driver = try FixtureBuilder.executable("console_driver", in: dir)
        let events: [Event] = [
            .make(.track, ["event": "Order Completed", "userId": "u-1", "properties": ["total": 30, "s": "a\nb"]]),
            .make(.identify, ["traits": ["plan": "pro"]]),
            .make(.page, ["name": "Home"]),
            .make(.group, ["groupId": "g-1", "userId": "u-1"]),
            .make(.alias, ["userId": "u-2", "previousId": "u-1"]),
        ]
        let input = events.map { "\($0.type == .page ? "screen" : $0.type.rawValue) \($0.payload.serialized())\n" }.joined()
        let result = try FixtureBuilder.capture(driver, [library, #"{"prefix":"[dev]"}"#], stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stderr.split(separator: "\n") == [
            #"[dev] track "Order Completed" userId="u-1" properties={"total":30,"s":"a\nb"}"#,
            #"[dev] identify anonymousId="anon-7" traits={"plan":"pro"}"#,
            #"[dev] page "Home" anonymousId="anon-7""#,
            #"[dev] group "g-1" userId="u-1""#,
            #"[dev] alias "u-2" <- "u-1""#,
        ])
    }
}
