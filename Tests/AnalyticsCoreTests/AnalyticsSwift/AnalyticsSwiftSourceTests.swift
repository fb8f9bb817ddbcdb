// Swift source written for analytics-swift, compiled with the toolchain's swiftc against the
// module this package built — the way an application that moves from analytics-swift meets it.
// The plugin classes are left exactly as analytics-swift's documentation writes them (non-final,
// `weak var analytics`, plain `var`s): in Swift 5 language mode they compile (Swift warns about
// Sendable) and run, and every hook is called. Shapes that cannot work here must not compile, and
// the error must say what to write.
import AnalyticsTestSupport
import Foundation
import Testing

@Suite struct AnalyticsSwiftSourceTests {
    /// Where SwiftPM put this test bundle (`.build/<triple>/debug`): the module and the objects.
    static let buildDirectory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }()

    static func swiftc() throws -> String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(dir)/swiftc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw BuiltExecutable.Missing(description: "swiftc not found on PATH")
    }

    /// Flags that find AnalyticsCore and the C modules it imports.
    static var moduleFlags: [String] {
        let root = FixtureBuilder.root
        return ["-I", buildDirectory + "/Modules", "-I", root + "/include", "-I", root + "/Sources/CZlib",
                "-I", root + "/Sources/CProcessControl"]
    }

    static func write(_ source: String, as name: String) throws -> (directory: String, file: String) {
        let directory = makeTempDirectory("swift-source")
        let file = directory + "/" + name
        try source.write(toFile: file, atomically: true, encoding: .utf8)
        return (directory, file)
    }

    @Test func anAnalyticsSwiftPluginClassCompilesUnchangedInSwift5ModeAndEveryHookRuns() throws {
        let (directory, file) = try Self.write(Self.analyticsSwiftProgram, as: "main.swift")
        defer { FixtureBuilder.remove(directory) }
        let objects = try FileManager.default.contentsOfDirectory(atPath: Self.buildDirectory + "/AnalyticsCore.build")
            .filter { $0.hasSuffix(".o") }.map { Self.buildDirectory + "/AnalyticsCore.build/" + $0 }
        #expect(!objects.isEmpty)
        let program = directory + "/program"
        let compiled = try FixtureBuilder.capture(try Self.swiftc(), ["-swift-version", "5", "-module-name", "App", file, "-o", program]
                                                  + Self.moduleFlags + objects + ["-lz"])
        #expect(compiled.status == 0, "\(compiled.stderr)")
        #expect(!compiled.stderr.contains("error:"), "\(compiled.stderr)")
        let ran = try FixtureBuilder.capture(program, [], directory: directory)
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout == """
            enrichment tracks=3 identifies=1 configured=true
            destination appId=abc-123 tracks=3 enriched=3 screens=1 flushes=1
            """ + "\n", "\(ran.stdout)\n\(ran.stderr)")
    }

    @Test func shapesThatCannotWorkHereFailToCompileSayingWhatToWrite() throws {
        for (source, expected) in [
            (Self.flushCompletionPlugin, "'FlushCompletion' is unavailable: flush(group:) is never called here: write func flush()"),
            (Self.waitingPlugin, "'WaitingPlugin' is unavailable: a plugin cannot pause event processing here"),
            ("import AnalyticsCore\nlet a = Analytics.shared()\n", "'shared()' is unavailable: no shared instance"),
        ] {
            let (directory, file) = try Self.write(source, as: "main.swift")
            defer { FixtureBuilder.remove(directory) }
            let checked = try FixtureBuilder.capture(try Self.swiftc(), ["-typecheck", "-swift-version", "6", file] + Self.moduleFlags)
            #expect(checked.status != 0, "must not compile: \(source)")
            #expect(checked.stderr.contains(expected), "\(checked.stderr)")
        }
    }

    static let flushCompletionPlugin = """
        import AnalyticsCore
        import Dispatch

        final class Uploading: DestinationPlugin, FlushCompletion {
            let key = "Uploading"
            let timeline = Timeline()
            func flush(group: DispatchGroup) { group.leave() }
        }
        """

    static let waitingPlugin = """
        import AnalyticsCore

        final class Consent: EventPlugin, WaitingPlugin {
            let type = PluginType.before
        }
        """

    /// An application as analytics-swift's documentation writes its plugins; only the import
    /// differs (`import AnalyticsCore` for `import Segment`) and the configuration keeps the test
    /// off the network.
    static let analyticsSwiftProgram = #"""
        import AnalyticsCore
        import Foundation

        class SomePlugin: EventPlugin {
            let type: PluginType = .enrichment
            weak var analytics: Analytics? = nil
            var tracks = 0
            var identifies = 0

            func identify(event: IdentifyEvent) -> IdentifyEvent? {
                identifies += 1
                return event
            }

            func track(event: TrackEvent) -> TrackEvent? {
                tracks += 1
                var workingEvent = event
                workingEvent.properties["enriched"] = true
                return workingEvent
            }
        }

        struct MyDestinationSettings: Codable {
            let appId: String
        }

        class MyDestination: DestinationPlugin {
            let timeline = Timeline()
            let type = PluginType.destination
            let key = "MyDestination"
            var analytics: Analytics? = nil
            var appId: String?
            var tracks = 0
            var enriched = 0
            var screens = 0
            var flushes = 0

            func update(settings: Settings, type: UpdateType) {
                guard let mine: MyDestinationSettings = settings.integrationSettings(forKey: key) else { return }
                appId = mine.appId
            }

            func track(event: TrackEvent) -> TrackEvent? {
                tracks += 1
                if event.properties["enriched"] == true { enriched += 1 }
                return event
            }

            func screen(event: ScreenEvent) -> ScreenEvent? {
                screens += 1
                return event
            }

            func flush() {
                flushes += 1
            }
        }

        let analytics = Analytics(configuration: Configuration(writeKey: "WRITE_KEY")
            .trackApplicationLifecycleEvents(false)
            .autoAddSegmentDestination(false)
            .storageMode(.memory(100))
            .settingsLocation(.defaultsOnly)
            .defaultSettings(Settings(["integrations": ["MyDestination": ["appId": "abc-123"]]])))
        let plugin = SomePlugin()
        let destination = MyDestination()
        analytics.add(plugin: plugin)
        analytics.add(plugin: destination)
        analytics.identify(userId: "u-1")
        analytics.track(name: "One")
        analytics.track(name: "Two", properties: ["n": 2])
        analytics.screen(title: "Home")
        analytics.track(name: "Three")
        analytics.flush()
        print("enrichment tracks=\(plugin.tracks) identifies=\(plugin.identifies) configured=\(plugin.analytics === analytics)")
        print("destination appId=\(destination.appId ?? "-") tracks=\(destination.tracks) enriched=\(destination.enriched) screens=\(destination.screens) flushes=\(destination.flushes)")
        analytics.shutdown()
        """#
}
