import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// Application events (`AH_EXT_APPLICATION`) for a library in process mode: the same fixture
/// library (Tests/Fixtures/application_probe.c, a real `.so`) runs the same scenario in-process and
/// in its own `analytics-plugin-runner`, and its log (every hook call, in order, with the
/// application events' kinds and JSON) and the reports must be the same.
@Suite struct IsolationApplicationTests {
    struct Outcome {
        let log: [String]
        let errors: [String]
        let analytics: Analytics
    }

    /// Builds the probe with `defines` into a fresh plugins directory, starts a client with the
    /// probe in `mode`, runs `scenario` (which ends with the shutdown) and returns the probe's log.
    func run(_ mode: IsolationMode, defines: [String] = [], configure: (inout Configuration) -> Void = { _ in },
             scenario: (Analytics) -> Void) throws -> Outcome {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        let log = dir + "/probe.log"
        try FixtureBuilder.library("application_probe", in: plugins, defines: ["LOG_PATH=\"\(log)\""] + defines)
        let errors = ErrorLog()
        var config = Configuration(writeKey: "app", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.defaultSettings = settings(enabling: ["AppProbe"])
        config.autoAddSegmentDestination = false
        config.trackApplicationLifecycleEvents = false
        config.pluginsDirectory = plugins
        config.isolation = IsolationConfiguration(byKey: ["AppProbe": mode])
        config.isolation.grants["AppProbe"] = JailGrants(files: [dir])  // its log
        makeRunnerWritable(dir)
        config.isolation.scanCacheFile = ""
        config.errorHandler = errors.handler
        configure(&config)
        let analytics = Analytics(configuration: config)
        #expect(analytics.isolatedLibraries.map(\.key) == (mode == .process ? ["AppProbe"] : []))
        scenario(analytics)
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return Outcome(log: text.split(separator: "\n").map(String.init), errors: errors.messages, analytics: analytics)
    }

    @Test func aDestinationInProcessModeHearsTheSameApplicationEventsInTheSameOrderAsInProcess() throws {
        // openURL fails as retryable: reported once, not retried (the moment has passed), in both modes.
        let defines = ["FAIL_KIND=9", "FAIL_STATUS=AH_ERR_RETRYABLE"]
        func scenario(_ analytics: Analytics) {
            analytics.track(name: "One")
            analytics.openURL(URL(string: "myapp://x?y=1")!, options: ["from": "mail"])
            analytics.application(.receivedRemoteNotification(userInfo: ["aps": ["alert": "hi"]]))
            analytics.application(.willResignActive)
            analytics.application(.didEnterBackground)  // then a flush
            analytics.application(.willEnterForeground)
            analytics.application(.didBecomeActive)
            analytics.track(name: "Two")
            analytics.application(.registeredForRemoteNotifications(deviceToken: "ab12"))
            analytics.shutdown()
        }
        let inProcess = try run(.inProcess, defines: defines, scenario: scenario)
        let process = try run(.process, defines: defines, scenario: scenario)
        #expect(process.analytics.find(key: "AppProbe") is ProcessDestination)
        #expect(inProcess.analytics.find(key: "AppProbe") is NativeDestination)
        let expected = [
            "started",
            #"app 0 {"name":"applicationDidFinishLaunching","options":{}}"#,
            "track",
            #"app 9 {"name":"openURL","url":"myapp://x?y=1","options":{"from":"mail"}}"#,
            "track",  // Deep Link Opened
            #"app 8 {"name":"receivedRemoteNotification","userInfo":{"aps":{"alert":"hi"}}}"#,
            #"app 4 {"name":"applicationWillResignActive"}"#,
            #"app 1 {"name":"applicationDidEnterBackground"}"#,
            "flush",
            #"app 2 {"name":"applicationWillEnterForeground"}"#,
            #"app 5 {"name":"applicationDidBecomeActive"}"#,
            "track",
            #"app 6 {"name":"registeredForRemoteNotifications","deviceToken":"ab12"}"#,
            // WILL_TERMINATE while everything still runs, before lifecycle(stopping).
            #"app 3 {"name":"applicationWillTerminate"}"#,
            "flush", "stopping", "destroy",
        ]
        #expect(inProcess.log == expected)
        #expect(process.log == inProcess.log, "the library cannot tell the difference")
        let report = "plugin AppProbe: application_event(openURL) failed (not retried): probe refuses kind 9"
        #expect(inProcess.errors == [report])
        #expect(process.errors == inProcess.errors)
    }

    @Test func aLibraryThatIsNotADestinationHearsThemInItsRunnerInOrderWithItsOtherCalls() throws {
        let defines = ["NOT_DESTINATION", "FAIL_KIND=1"]
        func scenario(_ analytics: Analytics) {
            analytics.application(.didEnterBackground)
            #expect(analytics.flush())
            analytics.openURL(URL(string: "myapp://open")!, options: [:])
            analytics.shutdown()
        }
        let inProcess = try run(.inProcess, defines: defines, scenario: scenario)
        let process = try run(.process, defines: defines, scenario: scenario)
        #expect(process.analytics.timeline.plugins(of: .utility).contains { $0 is ProcessUtilityLibrary })
        let expected = [
            "started",
            #"app 0 {"name":"applicationDidFinishLaunching","options":{}}"#,
            #"app 1 {"name":"applicationDidEnterBackground"}"#,
            "flush", "flush",  // after backgrounding, then the scenario's own
            #"app 9 {"name":"openURL","url":"myapp://open","options":{}}"#,
            #"app 3 {"name":"applicationWillTerminate"}"#,
            "flush", "stopping", "flush", "destroy",
        ]
        // The same calls in the same order, to the end: shutdown flushes a library that is not a
        // destination once more after lifecycle(stopping) in both modes.
        #expect(inProcess.log == expected)
        #expect(process.log == expected)
        let report = "plugin AppProbe: application_event(applicationDidEnterBackground) failed: probe refuses kind 1"
        #expect(inProcess.errors == [report])
        #expect(process.errors == inProcess.errors)
    }

    @Test func aRestartedRunnerHearsOnlyLifecycleStartedAndTheApplicationEventsNotYetAnswered() throws {
        // receivedRemoteNotification segfaults the runner; counted failed after one crash.
        let outcome = try run(.process, defines: ["CRASH_KIND=8"], configure: { $0.isolation.maxAttempts = 1 }) { analytics in
            analytics.track(name: "One")
            analytics.application(.receivedRemoteNotification(userInfo: ["n": 1]))
            analytics.application(.failedToRegisterForRemoteNotifications(error: "no service"))
            analytics.track(name: "Two")
            #expect(analytics.flush())
            analytics.shutdown()
        }
        #expect(outcome.log == [
            "started",
            #"app 0 {"name":"applicationDidFinishLaunching","options":{}}"#,
            "track",
            #"app 8 {"name":"receivedRemoteNotification","userInfo":{"n":1}}"#,
            // The new runner's instance: lifecycle(started) again, no applicationDidFinishLaunching
            // (as for an instance a settings refresh creates in-process), then what was not answered.
            "started",
            #"app 7 {"name":"failedToRegisterForRemoteNotifications","error":"no service"}"#,
            "track",
            "flush",
            #"app 3 {"name":"applicationWillTerminate"}"#,
            "flush", "stopping", "destroy",
        ])
        let stats = try #require(outcome.analytics.timeline.stats(forKey: "AppProbe"))
        #expect((stats.delivered, stats.failed, stats.restarts) == (2, 0, 1))
        #expect(outcome.errors.count == 1, "\(outcome.errors)")
        #expect(outcome.errors.first?.contains(
            "(process-isolated) was killed by signal 11 (SIGSEGV) while calling application_event(receivedRemoteNotification); "
            + "it ended the process 1 time and is counted failed") == true, "\(outcome.errors)")
    }
}
