import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// analytics-ios's app-state and notification hooks on Linux: Swift plugins, a C library through
/// the `analytics-host.application/1` table (a real `.so` built from Tests/Fixtures), and job
/// control in a real child process stopped with SIGTSTP and continued with SIGCONT.
@Suite struct ApplicationEventTests {
    final class Listener: UtilityPlugin, ApplicationLifecycle {
        let heard = Locked<[String]>([])
        func application(_ event: ApplicationEvent) { heard.withLock { $0.append(event.name) } }
        func flush() { heard.withLock { $0.append("flush") } }
        func shutdown() { heard.withLock { $0.append("shutdown") } }
    }

    final class SerialListener: SerialDestinationPlugin {
        let key = "Serial"
        var heard: [String] = []
        func track(_ event: TrackEvent) -> TrackEvent? { heard.append("track \(event.event)"); return event }
        func application(_ event: ApplicationEvent) { heard.append(event.name) }
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func swiftPluginsHearLaunchBackgroundForegroundAndTermination() throws {
        let dir = makeTempDirectory("app-events")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let listener = Listener()
        let recorder = RecordingDestination("Recorder")
        let analytics = Analytics(configuration: Configuration(writeKey: "app", storageDirectory: dir)
            .settingsLocation(.defaultsOnly)
            .defaultSettings(settings(enabling: ["Recorder", "Serial"]))
            .autoAddSegmentDestination(false)
            .application(ApplicationInfo(name: "tool", version: "1.2", build: "7"))
            .add(plugin: listener)
            .add(plugin: recorder))
        let serial = analytics.add(plugin: SerialListener())
        #expect(listener.heard.withLock { $0 } == ["applicationDidFinishLaunching"])
        analytics.track(name: "Working")
        analytics.application(.willResignActive)
        analytics.application(.didEnterBackground)
        // Backgrounding flushes, as analytics-swift does on iOS.
        #expect(listener.heard.withLock { $0 } == ["applicationDidFinishLaunching", "applicationWillResignActive",
                                                  "applicationDidEnterBackground", "flush"])
        analytics.application(.willEnterForeground)
        analytics.application(.didBecomeActive)
        analytics.application(.registeredForRemoteNotifications(deviceToken: "ab12"))
        #expect(analytics.flush())
        // The destination added after start-up did not hear the launch; it hears the rest in order
        // with its events.
        #expect(serial.withPlugin { $0.heard } == [
            "track Working", "applicationWillResignActive", "track Application Backgrounded", "applicationDidEnterBackground",
            "track Application Opened", "applicationWillEnterForeground", "applicationDidBecomeActive",
            "registeredForRemoteNotifications",
        ])
        let names = recorder.names
        #expect(names.suffix(3) == ["Working", "Application Backgrounded", "Application Opened"])
        #expect(recorder.events.last?.properties == ["version": "1.2", "build": "7", "from_background": true])
        analytics.shutdown()
        let heard = listener.heard.withLock { $0 }
        // willTerminate comes first at shutdown, before any plugin stops.
        let terminate = try #require(heard.firstIndex(of: "applicationWillTerminate"))
        #expect(heard.firstIndex(of: "shutdown").map { $0 > terminate } == true)
        #expect(serial.withPlugin { $0.heard.last } == "applicationWillTerminate")
    }

    @Test func aCLibraryHearsEachKindWithItsJSONInOrderWithItsOtherHooks() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let log = dir + "/probe.log"
        let file = try FixtureBuilder.library("application_probe", in: dir, defines: ["LOG_PATH=\"\(log)\""])
        let library = try PluginLoader().load(file: file)
        #expect(library.info.hooks.contains(.application))
        #expect(library.info.hooks.names == ["track", "flush", "destroy", "lifecycle", "application_event"])
        let errors = ErrorLog()
        let analytics = Analytics(configuration: Configuration(writeKey: "app", storageDirectory: dir + "/state")
            .settingsLocation(.defaultsOnly)
            .defaultSettings(settings(enabling: ["AppProbe"]))
            .autoAddSegmentDestination(false)
            .trackApplicationLifecycleEvents(false)
            .errorHandler(errors.handler)
            .pluginsDirectory(dir))
        analytics.track(name: "One")
        analytics.openURL(URL(string: "myapp://x?y=1")!, options: ["from": "mail"])
        analytics.application(.receivedRemoteNotification(userInfo: ["aps": ["alert": "hi"]]))
        analytics.application(.failedToRegisterForRemoteNotifications(error: "no service"))
        analytics.shutdown()
        #expect(errors.messages.isEmpty)
        #expect(lines(log) == [
            "started",
            #"app 0 {"name":"applicationDidFinishLaunching","options":{}}"#,
            "track",
            #"app 9 {"name":"openURL","url":"myapp://x?y=1","options":{"from":"mail"}}"#,
            "track",
            #"app 8 {"name":"receivedRemoteNotification","userInfo":{"aps":{"alert":"hi"}}}"#,
            #"app 7 {"name":"failedToRegisterForRemoteNotifications","error":"no service"}"#,
            #"app 3 {"name":"applicationWillTerminate"}"#,
            "flush", "stopping", "destroy",
        ])
    }

    @Test func aLibraryThatIsNotADestinationHearsThemOnItsThreadAndFailuresAreReported() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let log = dir + "/probe.log"
        try FixtureBuilder.library("application_probe", in: dir, defines: ["LOG_PATH=\"\(log)\"", "NOT_DESTINATION", "FAIL_KIND=1"])
        let errors = ErrorLog()
        let analytics = Analytics(configuration: Configuration(writeKey: "app", storageDirectory: dir + "/state")
            .settingsLocation(.defaultsOnly)
            .autoAddSegmentDestination(false)
            .trackApplicationLifecycleEvents(false)
            .errorHandler(errors.handler)
            .pluginsDirectory(dir))
        #expect(analytics.findAll(pluginType: NativeUtilityLibrary.self)?.count == 1)
        analytics.application(.didEnterBackground)
        #expect(analytics.flush())
        #expect(errors.messages == ["plugin AppProbe: application_event(applicationDidEnterBackground) failed: probe refuses kind 1"])
        analytics.shutdown()
        #expect(lines(log) == [
            "started",
            #"app 0 {"name":"applicationDidFinishLaunching","options":{}}"#,
            #"app 1 {"name":"applicationDidEnterBackground"}"#,
            "flush", "flush",  // after backgrounding, then the test's own flush
            #"app 3 {"name":"applicationWillTerminate"}"#,
            "flush", "stopping", "flush", "destroy",  // shutdown's order for a library that is not a destination
        ])
    }

    @Test func aTableShorterThanItsLayoutIsRefusedByName() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let file = try FixtureBuilder.library("application_probe", in: dir, defines: ["SHORT_TABLE"])
        #expect(throws: PluginLoadError.self) { try PluginLoader().load(file: file) }
        do { _ = try PluginLoader().load(file: file) } catch {
            #expect("\(error)".contains("ah_application.size of \"AppProbe\" is 4 bytes, smaller than the analytics-host.application/1 layout"))
        }
    }

    @Test func jobControlStopsAfterPluginsHeardItAndContinuesWithForegroundEvents() throws {
        let dir = makeTempDirectory("job-control")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = try QueueChildProcess(arguments: ["jobcontrol", dir])
        #expect(try child.readLine(timeout: 30) == "app applicationDidFinishLaunching")
        #expect(try child.readLine(timeout: 30) == "ready")
        kill(child.pid, SIGTSTP)
        #expect(try child.readLine(timeout: 30) == "app applicationWillResignActive")
        #expect(try child.readLine(timeout: 30) == "app applicationDidEnterBackground")
        #expect(try child.readLine(timeout: 30) == "flush")
        // Then the process stops itself, as SIGTSTP's default action would have.
        var status: Int32 = 0
        var waited: pid_t
        repeat { waited = waitpid(child.pid, &status, WUNTRACED) } while waited < 0 && errno == EINTR
        #expect(waited == child.pid)
        #expect(status & 0xff == 0x7f)  // WIFSTOPPED
        kill(child.pid, SIGCONT)
        #expect(try child.readLine(timeout: 30) == "app applicationWillEnterForeground")
        #expect(try child.readLine(timeout: 30) == "app applicationDidBecomeActive")
        child.closeInput()
        #expect(try child.readLine(timeout: 30) == "app applicationWillTerminate")
        #expect(try child.readLine(timeout: 30) == "flush")
        #expect(try child.readLine(timeout: 30) == "done")
        let exit = child.waitForExit()
        #expect(exit & 0x7f == 0 && (exit >> 8) & 0xff == 0)
    }
}
