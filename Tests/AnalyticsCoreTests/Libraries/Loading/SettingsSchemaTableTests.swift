import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// ABI 1.3 `AH_EXT_SETTINGS_SCHEMA` (Tests/Fixtures/settings_schema.c, a real `.so`): read at load
/// time, carried by the runner's scan record unchanged, a malformed table refused with the reason,
/// and a library's settings checked before `create` in-process and in process mode alike.
@Suite struct SettingsSchemaTableTests {
    static let expected = SettingsSchema([
        SettingDeclaration("apiKey", .string, required: true, "the key"),
        SettingDeclaration("flushAt", .number, default: 20, "events per upload"),
        SettingDeclaration("region", .string, default: "us", "the data center"),
        SettingDeclaration("tags", [.array, .string], "labels"),
    ])

    @Test func theTableIsReadAtLoadAndTheScanRecordCarriesItUnchanged() throws {
        let dir = makeTempDirectory("schema-table")
        defer { FixtureBuilder.remove(dir) }
        let file = try FixtureBuilder.library("settings_schema", in: dir, as: "libschema.so")
        let loaded = try PluginLoader().load(file: file)
        #expect(loaded.info.settingsSchema == Self.expected)
        // Through the runner, as `run` and `plugins` scan (and through the record's JSON text).
        let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
        let scanned = IsolatedScanner(runner: runner, allowGroupOrOtherWritable: false).scan(directory: dir)
        #expect(scanned.problems.isEmpty, "\(scanned.problems)")
        #expect(scanned.libraries.first?.settingsSchema == Self.expected)
        let text = JSON.object(ScanRecord.encode(loaded.info)).serialized()
        let record = try #require(try JSON(parsing: text).objectValue)
        let decoded = try #require(ScanRecord.decode(record))
        #expect(try decoded.get().settingsSchema == Self.expected)
        // A library without the table has none (and a record without one decodes so).
        let plain = try PluginLoader().load(file: try FixtureBuilder.library("noop", in: dir, as: "libplain.so"))
        #expect(plain.info.settingsSchema == nil)
    }

    @Test(arguments: [("SCHEMA_DUPLICATE", "\"apiKey\" is declared twice"), ("SCHEMA_BAD_DEFAULT", "the default of \"flushAt\" is a string, not a number"),
                      ("SCHEMA_NO_TYPE", "\"flushAt\" has no known AH_SETTING_* type bit"), ("SCHEMA_SHORT_ENTRY", "setting_size is 8 bytes"),
                      ("SCHEMA_EMPTY_NAME", "entry 3 has a NULL, empty or non-UTF-8 name")])
    func aMalformedTableRefusesTheLibrary(define: String, reason: String) throws {
        let dir = makeTempDirectory("schema-bad")
        defer { FixtureBuilder.remove(dir) }
        let file = try FixtureBuilder.library("settings_schema", in: dir, as: "libschema.so", defines: [define])
        do throws(PluginLoadError) {
            _ = try PluginLoader().load(file: file)
            Issue.record("\(define): the library was loaded")
        } catch {
            #expect(error.description.contains("analytics-host.settings-schema/1") && error.description.contains(reason), "\(error)")
        }
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func settingsAreCheckedBeforeCreate(mode: IsolationMode) throws {
        // A wrong type: not created, the key and reason reported and kept for the summary.
        let wrong = try ExtensionClient(libraries: [.init(fixture: "settings_schema", name: "schema")],
                                        settings: ["integrations": ["Schema": ["apiKey": 42, "flushAt": 5]]], mode: mode)
        #expect(wrong.analytics.find(key: "Schema") == nil)
        #expect(wrong.lines(of: "Schema").isEmpty, "create was never called: \(wrong.lines)")
        let notCreated = wrong.analytics.libraryProblems.notCreated
        #expect(notCreated.count == 1 && notCreated.first?.key == "Schema")
        #expect(notCreated.first?.reason.contains("integrations.Schema.apiKey: expected a string, found a number") == true, "\(notCreated)")
        #expect(wrong.errors.messages.contains { $0.contains("Schema") && $0.contains("could not be created") }, "\(wrong.errors.messages)")
        _ = wrong.analytics.shutdown()

        // Missing required: the same.
        let missing = try ExtensionClient(libraries: [.init(fixture: "settings_schema", name: "schema")],
                                          settings: ["integrations": ["Schema": ["region": "eu"]]], mode: mode)
        #expect(missing.analytics.find(key: "Schema") == nil)
        #expect(missing.analytics.libraryProblems.notCreated.first?.reason.contains("integrations.Schema.apiKey: missing") == true)
        _ = missing.analytics.shutdown()

        // An unknown key: a warning with "did you mean", and create is called as usual.
        let typo = try ExtensionClient(libraries: [.init(fixture: "settings_schema", name: "schema")],
                                       settings: ["integrations": ["Schema": ["apiKey": "k", "regoin": "eu"]]], mode: mode)
        typo.analytics.track("E")
        _ = typo.analytics.flush()
        #expect(typo.analytics.find(key: "Schema") != nil)
        #expect(typo.lines.contains { $0.contains("integrations.Schema.regoin") && $0.contains(#"did you mean "region"?"#) }, "\(typo.lines)")
        #expect(typo.lines(of: "Schema").contains { $0.hasPrefix("created ") }, "\(typo.lines)")
        #expect(typo.analytics.libraryProblems.notCreated.isEmpty)
        _ = typo.analytics.shutdown()
    }
}
