import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct ClientTests {
    @Test func eventsCarryTheSpecFieldsAndRealContext() throws {
        let (analytics, _) = makeClient(["D"]) { $0.application = ApplicationInfo(name: "Demo", version: "1.2", build: "42") }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.track("Viewed", properties: ["n": 1])
        #expect(analytics.flush())
        let e = try #require(d.events.first)
        #expect(e.type == .track && e.event == "Viewed")
        #expect(UUIDShape.matches(try #require(e.messageId)))
        let ts = try #require(e.timestamp)
        #expect(ts.count == 24 && ts.hasSuffix("Z") && ts.contains("."))
        #expect(e.anonymousId == analytics.anonymousId)
        let ctx = e.context
        #expect(ctx["library"]?["name"] == "analytics-host")
        #expect(ctx["os"]?["name"] == "Linux")
        let release = SystemContext.osRelease()
        #expect(ctx["os"]?["version"]?.stringValue == release["VERSION_ID"])
        #expect(ctx["app"] == ["name": "Demo", "version": "1.2", "build": "42"])
        #expect(ctx["locale"]?.stringValue?.isEmpty == false)
        #expect(ctx["timezone"]?.stringValue?.isEmpty == false)
    }

    @Test func userStateSurvivesARestartAndResetRotatesIt() throws {
        let dir = makeTempDirectory("user")
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        let first = Analytics(configuration: config)
        first.identify(userId: "u-1", traits: ["plan": "pro"])
        first.identify(traits: ["age": 30])
        let anon = first.anonymousId
        #expect(first.shutdown())

        let second = Analytics(configuration: config)
        #expect(second.userId == "u-1")
        #expect(second.anonymousId == anon)
        #expect(second.traits == ["plan": "pro", "age": 30])
        second.reset()
        #expect(second.userId == nil)
        #expect(second.traits.isEmpty)
        #expect(second.anonymousId != anon)
        let rotated = second.anonymousId
        second.shutdown()

        let third = Analytics(configuration: config)
        #expect(third.userId == nil && third.anonymousId == rotated)
    }

    @Test func aliasAndGroupAndIdentifyShapes() throws {
        let (analytics, _) = makeClient(["D"])
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.identify(userId: "old", traits: ["a": 1])
        analytics.alias("new")
        analytics.group(groupId: "g1", traits: ["name": "Acme"])
        analytics.screen("Home", category: "Main")
        #expect(analytics.flush())
        #expect(d.events.map(\.type) == [.identify, .alias, .group, .screen])
        #expect(d.events[0].userId == "old" && d.events[0].traits == ["a": 1])
        #expect(d.events[1].previousId == "old" && d.events[1].userId == "new")
        #expect(d.events[2].groupId == "g1")
        #expect(d.events[3].payload["category"] == "Main")
        #expect(analytics.userId == "new")
    }

    @Test func invalidCallsAreRejectedWithAReason() throws {
        let (analytics, errors) = makeClient(["D"])
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.track("")
        analytics.group(groupId: "")
        analytics.track("NaN", properties: ["v": .number(.nan)])
        analytics.track("Inf", properties: ["nested": ["v": .number(.infinity)]])
        analytics.track("Fine")
        #expect(analytics.flush())
        #expect(d.names == ["Fine"])
        let messages = errors.messages
        #expect(messages.count == 4)
        #expect(messages[0].contains("track needs a non-empty \"event\""))
        #expect(messages[1].contains("group needs a non-empty \"groupId\""))
        #expect(messages[2].contains("non-finite"))
        #expect(throws: EventError.self) { try analytics.process(payload: ["type": "bogus"]) }
        #expect(throws: EventError.self) { try analytics.process(payload: ["event": "no type"]) }
    }

    @Test func processKeepsGivenFieldsLosslessly() throws {
        let (analytics, _) = makeClient(["D"])
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        let line = #"{"type":"page","name":"Docs","messageId":"m-1","timestamp":"2026-01-01T00:00:00.000Z","context":{"ip":"1.2.3.4"},"integrations":{"D":true},"custom":{"x":[1,2]},"userId":"u"}"#
        try analytics.process(payload: try #require(JSON(parsing: line).objectValue))
        #expect(analytics.flush())
        let e = try #require(d.events.first)
        #expect(e.type == .page && e.name == "Docs")
        #expect(e.messageId == "m-1" && e.timestamp == "2026-01-01T00:00:00.000Z")
        #expect(e.payload["custom"] == ["x": [1, 2]])
        #expect(e.context["ip"] == "1.2.3.4")
        #expect(e.context["library"]?["name"] == "analytics-host")
    }

    @Test func lifecycleEventsInstalledThenOpenedThenUpdated() throws {
        let dir = makeTempDirectory("life")
        func launch(_ version: String, _ build: String) -> [Event] {
            let d = RecordingDestination("D")
            var config = Configuration(writeKey: "k", storageDirectory: dir)
            config.settingsLocation = .defaultsOnly
            config.application = ApplicationInfo(name: "App", version: version, build: build)
            config.defaultSettings = settings(enabling: ["D"])
            config.plugins = [d]
            let a = Analytics(configuration: config)
            a.shutdown()
            return d.events
        }
        #expect(launch("1.0", "1").map(\.event) == ["Application Installed", "Application Opened"])
        #expect(launch("1.0", "1").map(\.event) == ["Application Opened"])
        let updated = launch("1.1", "2")
        #expect(updated.map(\.event) == ["Application Updated", "Application Opened"])
        #expect(updated[0].properties["previous_version"] == "1.0")
        #expect(updated[0].properties["previous_build"] == "1")
        #expect(updated[0].properties["version"] == "1.1")
    }

    @Test func pluginsGetStartAndShutdownHooks() throws {
        let (analytics, _) = makeClient(["D"])
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        #expect(d.recorded.configured == 1)
        #expect(analytics.shutdown())
        #expect(d.recorded.shutdowns == 1)
        #expect(d.recorded.flushes == 1, "shutdown flushes first")
        analytics.track("ignored after shutdown")
        #expect(d.events.isEmpty)
    }

    @Test func corruptUserFileIsReportedAndReplaced() throws {
        let dir = makeTempDirectory("corrupt")
        try "{not json".write(toFile: dir + "/user.json", atomically: true, encoding: .utf8)
        let errors = ErrorLog()
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.errorHandler = errors.handler
        let a = Analytics(configuration: config)
        #expect(errors.messages.first?.contains("user.json") == true)
        #expect(!a.anonymousId.isEmpty)
    }
}
