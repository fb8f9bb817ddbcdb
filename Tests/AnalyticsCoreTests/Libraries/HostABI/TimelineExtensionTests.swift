import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// ABI 1.2 from the host's side, with real libraries built from `Tests/Fixtures/timeline_plugins.c`:
/// the role, timeline plugins on the client's and on a destination's timeline, their ownership and
/// thread rules, and the client capability.
@Suite struct TimelineExtensionTests {
    static let tl = ExtensionClient.Library(name: "timeliner")

    func names(_ destination: RecordingDestination) -> [String] { destination.names }

    @Test func aWholeSettingsLibraryIsCreatedWithoutAnIntegrationsEntryAndSeesTheWholeDocument() throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [Self.tl], settings: [
            "integrations": ["Rec": [:]], "edgeFunction": ["version": 3, "downloadURL": ""],
        ], recorders: [rec])
        let create = try #require(c.lines(of: "Timeliner", starting: "create settings=").first)
        #expect(create.contains(#""edgeFunction":{"version":3,"downloadURL":""}"#))
        #expect(create.contains(#""integrations":{"Rec":{}}"#))
        // Not a destination: no worker, no fan-out, but a utility plugin of the client's timeline.
        #expect(c.analytics.find(key: "Timeliner") == nil)
        #expect(c.analytics.timeline.plugins(of: .utility).contains { ($0 as? NativeUtilityLibrary)?.key == "Timeliner" })
        #expect(c.analytics.flush())
        #expect(c.lines(of: "Timeliner", starting: "instance update kind=0 settings=").first?.contains("edgeFunction") == true)
        #expect(c.lines(of: "Timeliner", starting: "plugin Timeliner update kind=0 settings=").first?.contains("edgeFunction") == true)
        #expect(c.lines(of: "Timeliner").contains("instance flush"))
        #expect(c.lines(of: "Timeliner", starting: "unknown extension").first == "unknown extension: 0")
        #expect(c.analytics.shutdown())
        #expect(Array(c.lines(of: "Timeliner").suffix(4)) == [
            "instance lifecycle 1", "instance flush", "release Timeliner count=1 calls=0 max_concurrency=0 inside=0", "destroy",
        ])
        // Every instance call ran on one host thread of its own (not the test's, not a worker's).
        let threads = c.threads(of: "Timeliner")
        #expect(Set(threads.map(\.hook)) == ["lifecycle", "update", "flush", "destroy"])
        #expect(Set(threads.map(\.thread)).count == 1)
        #expect(threads.first?.thread != UInt(bitPattern: Int(bitPattern: pthread_self())))
        #expect(c.errors.messages.isEmpty)
    }

    @Test func integrationsFalseSwitchesItOffAndARefreshBringsItBack() throws {
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": ["Timeliner": false]])
        #expect(c.lines(of: "Timeliner").isEmpty)
        c.analytics.update(settings: Settings(["integrations": [:], "edgeFunction": [:]]))
        #expect(c.lines(of: "Timeliner", starting: "create settings=").count == 1)
        c.analytics.update(settings: Settings(["integrations": ["Timeliner": false]]))
        #expect(c.lines(of: "Timeliner").last == "destroy")
        #expect(c.lines(of: "Timeliner", starting: "release Timeliner count=1").count == 1)
        #expect(c.analytics.timeline.plugins(of: .before).allSatisfy { !($0 is NativeTimelinePlugin) })
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func keepDropAndReplaceOnTheClientTimeline(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": ["Rec": [:]]], recorders: [rec], mode: mode)
        c.analytics.track("Keep", properties: ["n": 1])
        c.analytics.track("Drop")
        c.analytics.track("Replace", properties: ["email": "a@b.c"])
        #expect(c.analytics.flush())
        #expect(rec.names == ["Keep", "Replaced"])
        #expect(rec.events[0].properties == ["n": 1])
        #expect(rec.events[1].properties == ["email": "a@b.c"])
        #expect(rec.events[1].messageId != nil)
        #expect(c.errors.messages.isEmpty)
        let plugin = try #require(c.analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first)
        #expect(plugin.name == "Timeliner" && plugin.ownerKey == "Timeliner" && plugin.destinationKey == nil)
        // In process mode the library's instance lives in its runner: the host never opened it.
        let instance = try #require(c.analytics.timeline.plugins(of: .utility).first { ($0 as? ProcessUtilityLibrary)?.key == "Timeliner" || ($0 as? NativeUtilityLibrary)?.key == "Timeliner" })
        #expect((instance is ProcessUtilityLibrary) == (mode == .process))
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func aFailureIsReportedWithThePluginNameCountedAndTheEventGoesOn(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["PNAME=\"redactor\""])],
                                    settings: ["integrations": ["Rec": [:]]], recorders: [rec], mode: mode)
        c.analytics.track("Fail")
        c.analytics.track("BadReplace")
        #expect(c.analytics.flush())
        #expect(rec.names == ["Fail", "BadReplace"])
        #expect(c.errors.messages.count == 2)
        #expect(c.errors.messages[0] == "plugin redactor: process failed: fixture failure in redactor; event passed on unchanged")
        #expect(c.errors.messages[1].hasPrefix("plugin redactor: answered REPLACE without a usable replacement (the replacement is not JSON"))
        #expect(c.lines(of: "Timeliner").contains("bad write status=2"))
        let plugin = try #require(c.analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first)
        #expect(plugin.errors == 2)
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func aFailClosedPluginDropsTheEventItFailedOn(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["PFLAGS=AH_PLUGIN_FAIL_CLOSED"])],
                                    settings: ["integrations": ["Rec": [:]]], recorders: [rec], mode: mode)
        c.analytics.track("Fail")
        c.analytics.track("Keep")
        #expect(c.analytics.flush())
        #expect(rec.names == ["Keep"])
        #expect(c.errors.messages == ["plugin Timeliner: process failed: fixture failure in Timeliner; event dropped (fail-closed)"])
        // A plugin failing on every event does not flood the error handler: the first ten are
        // reported, then one in a thousand; every failure is counted.
        for _ in 0..<1_998 { c.analytics.track("Fail") }
        #expect(c.errors.messages.count == 11)
        #expect(c.errors.messages.last == "plugin Timeliner: process failed: fixture failure in Timeliner; event dropped (fail-closed) (1000 failures so far; further ones are reported one in 1000)")
        let plugin = try #require(c.analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first)
        #expect(plugin.errors == 1_999)
        #expect(c.analytics.shutdown())
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func aScopedPluginRunsInItsDestinationsTimelineAfterMiddlewareAndOnlyThere(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let other = RecordingDestination("Other")
        let tag: Middleware = { context, next in
            guard var event = context.payload else { return next(context) }
            var properties = event.properties
            properties["middleware"] = true
            event.properties = properties
            var copy = context
            copy.payload = event
            next(copy)
        }
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["SCOPE=\"Rec\""])],
                                    settings: ["integrations": ["Rec": [:], "Other": [:]]], recorders: [rec, other],
                                    destinationMiddleware: ["Rec": [tag]], mode: mode)
        c.analytics.track("Replace")
        c.analytics.track("Drop")
        #expect(c.analytics.flush())
        // The plugin copied the event as it found it: the middleware had run before.
        #expect(rec.names == ["Replaced"])
        #expect(rec.events.first?.properties["middleware"] == true)
        #expect(other.names == ["Replace", "Drop"])
        let stages = rec.timeline.plugins(of: .before)
        #expect(stages.first is MiddlewarePlugin)
        #expect(stages.last is NativeTimelinePlugin)
        #expect(c.analytics.timeline.plugins(of: .before).allSatisfy { !($0 is NativeTimelinePlugin) })
        #expect(c.analytics.timeline.stats(forKey: "Rec")?.dropped == 1)
        #expect(c.analytics.shutdown())
    }

    @Test func aPluginForADestinationThatDoesNotExistYetIsAttachedWhenItIsCreated() throws {
        let later = RecordingFactory("Later")
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["SCOPE=\"Later\""])],
                                    settings: ["integrations": [:]], factories: [later])
        c.analytics.track("Drop")
        #expect(c.analytics.flush())
        #expect(c.analytics.scopedPlugins.plugins(forKey: "Later").count == 1)
        c.analytics.update(settings: Settings(["integrations": ["Later": [:]]]))
        let destination = try #require(later.made.withLock { $0.first })
        c.analytics.track("Drop")
        c.analytics.track("Keep")
        #expect(c.analytics.flush())
        #expect(destination.names == ["Keep"])
        // Removed and created again by the settings: the plugin follows the key.
        c.analytics.update(settings: Settings(["integrations": [:]]))
        c.analytics.update(settings: Settings(["integrations": ["Later": [:]]]))
        let again = try #require(later.made.withLock { $0.count == 2 ? $0[1] : nil })
        c.analytics.track("Drop")
        c.analytics.track("Keep")
        #expect(c.analytics.flush())
        #expect(again.names == ["Keep"])
        #expect(c.lines(of: "Timeliner", starting: "release").isEmpty)
        #expect(c.analytics.shutdown())
        #expect(c.lines(of: "Timeliner", starting: "release").count == 1)
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func removingItselfFromItsOwnCallbackReleasesOnceAfterTheCall(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": ["Rec": [:]]], recorders: [rec], mode: mode)
        c.analytics.track("RemoveMe")
        c.analytics.track("Drop")
        #expect(c.analytics.flush())
        #expect(rec.names == ["RemoveMe", "Drop"])
        let lines = c.lines(of: "Timeliner")
        let removed = try #require(lines.firstIndex(of: "removed Timeliner from its callback: 0, again: 2, released yet: 0"))
        let released = try #require(lines.firstIndex { $0.hasPrefix("release Timeliner count=1 calls=1") })
        #expect(removed < released)
        #expect(c.analytics.timeline.plugins(of: .before).allSatisfy { !($0 is NativeTimelinePlugin) })
        #expect(c.analytics.shutdown())
        #expect(c.lines(of: "Timeliner", starting: "release").count == 1)
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func aPluginAddedFromACallbackJoinsAndIsReleasedBeforeDestroy(mode: IsolationMode) throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": ["Rec": [:]]], recorders: [rec], mode: mode)
        c.analytics.track("AddAnother")
        #expect(c.lines(of: "Timeliner").contains("added Timeliner-2 from a callback: 1 "))
        let second = try #require(c.analytics.timeline.plugins(of: .enrichment).first as? NativeTimelinePlugin)
        #expect(second.name == "Timeliner-2")
        c.analytics.track("Drop")
        #expect(c.analytics.flush())
        #expect(rec.names == ["AddAnother"])
        #expect(c.analytics.shutdown())
        let lines = c.lines(of: "Timeliner")
        #expect(lines.filter { $0.hasPrefix("release") }.count == 2)
        #expect(lines.last == "destroy")
        #expect(c.errors.messages.isEmpty)
    }

    @Test func callsAreSerializedUnlessThePluginIsThreadSafe() throws {
        let serial = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": [:]])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<40 { serial.analytics.track("Slow") }
        }
        #expect(serial.analytics.shutdown())
        #expect(serial.lines(of: "Timeliner", starting: "release").first == "release Timeliner count=1 calls=160 max_concurrency=1 inside=0")

        let parallel = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["PFLAGS=AH_PLUGIN_THREAD_SAFE"])],
                                           settings: ["integrations": [:]])
        let flagged = parallel.analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first
        #expect(flagged?.threadSafe == true)
        // Each call waits until another one is inside: only possible when calls overlap.
        let threads = (0..<2).map { _ in Thread { parallel.analytics.track("Rendezvous") } }
        threads.forEach { $0.start() }
        #expect(eventually { parallel.lines(of: "Timeliner", starting: "plugin").isEmpty == false && !threads.contains { !$0.isFinished } })
        #expect(parallel.errors.messages.isEmpty)
        #expect(parallel.analytics.shutdown())
        #expect(parallel.lines(of: "Timeliner", starting: "release").first == "release Timeliner count=1 calls=2 max_concurrency=2 inside=0")
    }

    @Test func theClientCapabilityGivesOptionsAStorageDirectoryAndTraits() throws {
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": [:]],
                                    pluginOptions: ["Timeliner": ["fallbackBundle": "/x/b.js"]])
        let lines = c.lines(of: "Timeliner")
        let directory = c.storage + "/plugins/Timeliner"
        #expect(lines.contains("storage=\(directory) (\(directory.utf8.count))"))
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(lines.contains(#"options={"fallbackBundle":"/x/b.js"} (28)"#))
        #expect(lines.contains(#"options truncated={"f (28)"#))
        #expect(lines.contains("traits={} (2)"))
        #expect(c.analytics.shutdown())
    }

    @Test func resetFromALibraryChangesTheUserAtOnceAndResetsPluginsLater() throws {
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": [:]])
        c.analytics.identify(userId: "u-1", traits: ["plan": "pro"])
        let before = c.analytics.anonymousId
        c.analytics.track("ResetUser")
        #expect(c.lines(of: "Timeliner").contains("client reset: 0"))
        #expect(c.analytics.userId == nil)
        #expect(c.analytics.traits.isEmpty)
        #expect(c.analytics.anonymousId != before)
        #expect(eventually { c.lines(of: "Timeliner").contains("plugin Timeliner reset") })
        #expect(eventually { c.lines(of: "Timeliner").contains("instance reset") })
        c.analytics.track("FlushAll")
        #expect(c.lines(of: "Timeliner").contains("client flush: 0"))
        #expect(eventually { c.lines(of: "Timeliner").contains("plugin Timeliner flush") })
        #expect(c.analytics.shutdown())
    }

    @Test func anEventSentFromInsideACallbackComesBackLaterThroughTheSamePlugin() throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [Self.tl], settings: ["integrations": ["Rec": [:]]], recorders: [rec])
        c.analytics.track("SendBack")
        #expect(c.lines(of: "Timeliner").contains("sent back: 0"))
        #expect(c.analytics.flush())
        #expect(c.lines(of: "Timeliner").contains("echo came back"))
        // The echo runs on a host thread while the original finishes its trip on the caller's:
        // both arrive once, in either order (send_event promises "later", not "after").
        #expect(rec.names.sorted() == ["Echo", "SendBack"])
        #expect(rec.events.first { $0.event == "Echo" }?.anonymousId == c.analytics.anonymousId)
        #expect(c.analytics.shutdown())
    }

    @Test func utilityAndAfterPluginsSitWhereTheirTypeSays() throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [
            ExtensionClient.Library(name: "u", defines: ["KEY=\"Util\"", "STAGE=AH_PLUGIN_UTILITY"]),
            ExtensionClient.Library(name: "a", defines: ["KEY=\"After\"", "STAGE=AH_PLUGIN_AFTER"]),
        ], settings: ["integrations": ["Rec": [:]]], recorders: [rec])
        #expect(c.analytics.timeline.plugins(of: .utility).contains { ($0 as? NativeTimelinePlugin)?.name == "Util" })
        #expect(c.analytics.timeline.plugins(of: .after).contains { ($0 as? NativeTimelinePlugin)?.name == "After" })
        // "Drop" at the after stage ends the event after fan-out: destinations still get it.
        c.analytics.track("Drop")
        c.analytics.reset()
        #expect(c.analytics.flush())
        #expect(rec.names == ["Drop"])
        #expect(c.lines(of: "Util").contains("plugin Util reset") && c.lines(of: "Util").contains("plugin Util flush"))
        #expect(c.analytics.shutdown())
        // The utility plugin never saw an event.
        #expect(c.lines(of: "Util", starting: "release").first == "release Util count=1 calls=0 max_concurrency=0 inside=0")
        #expect(c.lines(of: "After", starting: "release").first == "release After count=1 calls=1 max_concurrency=1 inside=0")
    }

    @Test func aDescriptionTheHostCannotUseIsRefusedWithTheReason() throws {
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["STAGE=7"])],
                                    settings: ["integrations": [:]])
        #expect(c.errors.messages.contains("plugin Timeliner: add refused: unknown plugin type 7 (expected AH_PLUGIN_BEFORE, _ENRICHMENT, _AFTER or _UTILITY)"))
        #expect(c.errors.messages.contains { $0.contains("create of integration \"Timeliner\" failed: unknown plugin type 7") })
        #expect(c.analytics.shutdown())
    }

    @Test func aCreateThatFailsLeavesNoPluginBehind() throws {
        let rec = RecordingDestination("Rec")
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["FAIL_AFTER_ADD"])],
                                    settings: ["integrations": ["Rec": [:]]], recorders: [rec])
        #expect(c.errors.messages.contains { $0.contains("create of integration \"Timeliner\" failed: failing after add") })
        #expect(c.lines(of: "Timeliner", starting: "release Timeliner count=1").count == 1)
        #expect(!c.analytics.timeline.plugins(of: .before).contains { $0 is NativeTimelinePlugin })
        c.analytics.track("Drop")
        #expect(c.analytics.flush())
        #expect(rec.names == ["Drop"])
        #expect(c.analytics.shutdown())
    }

    @Test func aLibraryThatIsBothDestinationAndWholeSettingsGetsEventsWithoutAnEntry() throws {
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["ROLE=3", "NO_PLUGIN"])],
                                    settings: ["integrations": ["Other": [:]], "edgeFunction": [:]])
        #expect(c.analytics.find(key: "Timeliner") is NativeDestination)
        c.analytics.track("Keep")
        #expect(c.analytics.flush())
        #expect(c.lines(of: "Timeliner", starting: "destination track").count == 1)
        #expect(c.lines(of: "Timeliner", starting: "instance update kind=0").first?.contains("edgeFunction") == true)
        c.analytics.track("Off", integrations: ["Timeliner": false])
        #expect(c.analytics.flush())
        #expect(c.lines(of: "Timeliner", starting: "destination track").count == 1)
        #expect(c.analytics.shutdown())
    }

    @Test func roleIsReadAndOldLibrariesStayDestinations() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let whole = try PluginLoader().load(file: try FixtureBuilder.library("timeline_plugins", in: dir))
        #expect(whole.info.role == .wholeSettings)
        #expect(!whole.info.isDestination)
        let both = try PluginLoader().load(file: try FixtureBuilder.library("timeline_plugins", in: dir, as: "libboth.so",
                                                                            defines: ["KEY=\"Both\"", "ROLE=3"]))
        #expect(both.info.role == [.destination, .wholeSettings])
        let zero = try PluginLoader().load(file: try FixtureBuilder.library("timeline_plugins", in: dir, as: "libzero.so",
                                                                            defines: ["KEY=\"Zero\"", "ROLE=0"]))
        #expect(zero.info.role == .destination)
        let old = try PluginLoader().load(file: try FixtureBuilder.library("old_minor", in: dir))
        #expect(old.info.role == .destination)
        #expect(old.info.abiVersion == ABIVersion(major: 1, minor: 0))
    }
}

/// 1.0 and 1.1 libraries under a 1.2 host: destinations, as they always were.
@Suite struct OlderMinorTests {
    @Test func aLibraryBuiltFor11LoadsAsADestinationAndHearsItsLifecycle() throws {
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "v11_minor", name: "v11")],
                                    settings: ["integrations": ["MidTimer": [:]]])
        let destination = try #require(c.analytics.find(key: "MidTimer") as? NativeDestination)
        #expect(destination.integration.library.info.abiVersion == ABIVersion(major: 1, minor: 1))
        #expect(destination.integration.library.info.role == .destination)
        c.analytics.track("Old")
        #expect(c.analytics.shutdown())
        #expect(c.lines(of: "MidTimer") == ["v1.1 started", "v1.1 track", "v1.1 stopping"])
    }

    @Test func aLibraryBuiltFor10IsCreatedOnlyWhenNamedAndGetsEvents() throws {
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "old_minor", name: "old")],
                                    settings: ["integrations": [:]])
        #expect(c.analytics.find(key: "OldTimer") == nil)
        c.analytics.update(settings: Settings(["integrations": ["OldTimer": [:]]]))
        c.analytics.track("Old")
        #expect(c.analytics.shutdown())
        #expect(c.lines(of: "OldTimer").count == 1)
        #expect(c.lines(of: "OldTimer").first?.hasPrefix("old track ") == true)
    }
}
