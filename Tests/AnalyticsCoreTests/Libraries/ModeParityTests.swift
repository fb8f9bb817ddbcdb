import Foundation
import Testing
@testable import AnalyticsCore

/// Process mode is in-process behind a boundary: the same library (Tests/Fixtures/parity_probe.c, a
/// real `.so`) runs the same scenario in-process and in its own `analytics-plugin-runner`, and
/// everything observable must match — its call log, what `send_event` answered in each phase,
/// what reached the other destinations, the destination's counters (the summary's columns) and the
/// reports. A difference by design is named where it is asserted.
@Suite struct ModeParityTests {
    struct Outcome: Equatable, CustomStringConvertible {
        var log: [String]
        var received: [String]
        var columns: [String: Int]
        var errors: [String]
        var description: String { "log \(log)\nreceived \(received)\ncolumns \(columns)\nerrors \(errors)" }
    }

    /// Runs `scenario` in `mode`; `scenario` ends with the shutdown.
    func run(_ mode: IsolationMode, key: String = "Parity", defines: [String] = [], settings: JSONObject,
             configure: (inout Configuration) -> Void = { _ in }, scenario: (Analytics) -> Void) throws -> Outcome {
        let recorder = RecordingDestination("Rec")
        let client = try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "parity_probe", name: "parity", defines: defines)],
                                         settings: settings, recorders: [recorder], mode: mode, configure: configure)
        scenario(client.analytics)
        let stats = client.analytics.timeline.stats(forKey: key)
        let columns = stats.map { s in
            ["received": s.received, "delivered": s.delivered, "dropped": s.dropped, "skipped": s.skipped,
             "failed": s.failed, "queued": s.queued, "abandoned": s.abandoned, "retried": s.retried]
        } ?? [:]
        return Outcome(log: client.lines(of: key), received: recorder.names, columns: columns,
                       errors: client.errors.messages.map(Self.withoutPaths).sorted())
    }

    /// Reports name the library file, which lives in a per-run directory.
    static func withoutPaths(_ message: String) -> String {
        message.replacingOccurrences(of: #"/[^ ]*/libparity\.so"#, with: "libparity.so", options: .regularExpression)
    }

    /// `ordered: false` compares what happened, not its interleaving: events a library sends come
    /// back through the host's queue, and where they land among the application's own calls is
    /// decided by threads in either mode.
    func expectSame(_ settings: JSONObject, defines: [String] = [], key: String = "Parity", ordered: Bool = true,
                    configure: (inout Configuration) -> Void = { _ in },
                    _ scenario: (Analytics) -> Void) throws -> Outcome {
        var inProcess = try run(.inProcess, key: key, defines: defines, settings: settings, configure: configure, scenario: scenario)
        var process = try run(.process, key: key, defines: defines, settings: settings, configure: configure, scenario: scenario)
        if !ordered {
            for o in [\Outcome.log, \Outcome.received] {
                inProcess[keyPath: o].sort()
                process[keyPath: o].sort()
            }
        }
        #expect(inProcess == process, "in-process:\n\(inProcess)\nprocess mode:\n\(process)")
        return inProcess
    }

    @Test func everyCallInTheSameOrderWithTheSameCounters() throws {
        let settings: JSONObject = ["integrations": ["Parity": ["mark": "one"], "Rec": [:]]]
        let outcome = try expectSame(settings) { analytics in
            analytics.identify(userId: "u1", traits: ["plan": "pro"])
            analytics.track("Buy", properties: ["price": 1.5])
            analytics.screen("Home")
            _ = try? analytics.process(payload: ["type": "page", "name": "Landing"])
            analytics.group(groupId: "g1")
            analytics.alias("u2")
            _ = analytics.flush()
            analytics.reset()
            analytics.update(settings: Settings(["integrations": ["Parity": ["mark": "two"], "Rec": [:]]]), type: .refresh)
            analytics.track("After")
            _ = analytics.shutdown()
        }
        #expect(outcome.log == ["create", "started", "update initial mark=one", "identify analytics-host", "track Buy",
                                "screen Home", "screen Landing", "group analytics-host", "alias analytics-host", "flush", "reset",
                                "update refresh mark=two", "track After", "flush", "stopping", "destroy"], "\(outcome.log)")
        #expect(outcome.columns["delivered"] == 7 && outcome.columns["received"] == 7, "\(outcome.columns)")
    }

    @Test func sendEventInEachPhaseOfADestination() throws {
        let settings: JSONObject = ["integrations": ["Parity": ["send": ["started": 3, "stopping": 4, "flushing": 2]], "Rec": [:]]]
        let outcome = try expectSame(settings, ordered: false) { analytics in
            analytics.track("One")
            _ = analytics.flush()
            _ = analytics.shutdown()
        }
        #expect(outcome.log.contains("sent started 3 of 3") && outcome.log.contains("sent stopping 4 of 4")
                && outcome.log.contains("sent flushing 2 of 2"), "\(outcome.log)")
        #expect(outcome.received.filter { $0 == "From stopping" }.count == 4, "\(outcome.received)")
    }

    /// The issue's case: a library that is not a destination (whole settings, no destination bit)
    /// sends 50 events from lifecycle(STOPPING). In-process it stops while every destination runs;
    /// in process mode it stopped after them and got 0 of 50.
    @Test func aLibraryThatIsNotADestinationSendsFromStopping() throws {
        let settings: JSONObject = ["integrations": ["Rec": [:]], "parity": ["send": ["stopping": 50]]]
        let outcome = try expectSame(settings, defines: ["ROLE=AH_ROLE_WHOLE_SETTINGS"]) { analytics in
            analytics.track("One")
            _ = analytics.shutdown()
        }
        #expect(outcome.log.contains("sent stopping 50 of 50"), "\(outcome.log)")
        #expect(outcome.received.filter { $0 == "From stopping" }.count == 50, "\(outcome.received)")
    }

    /// A whole-settings destination gets events without being named; `integrations[key] = false`
    /// alone keeps them away.
    @Test func wholeSettingsGating() throws {
        let defines = ["ROLE=(AH_ROLE_DESTINATION|AH_ROLE_WHOLE_SETTINGS)"]
        let unnamed = try expectSame(["integrations": ["Rec": [:]]], defines: defines) { analytics in
            analytics.track("Seen")
            _ = analytics.shutdown()
        }
        #expect(unnamed.log.contains("track Seen"), "\(unnamed.log)")
        let off = try expectSame(["integrations": ["Rec": [:], "Parity": false]], defines: defines) { analytics in
            analytics.track("Unseen")
            _ = analytics.shutdown()
        }
        #expect(!off.log.contains("track Unseen") && off.columns["delivered"] ?? 0 == 0, "\(off)")
    }

    /// A library without a hook for a type: fan-out skips those events (no call to make).
    @Test func eventTypesWithoutAHookAreSkippedAlike() throws {
        let settings: JSONObject = ["integrations": ["Parity": [:], "Rec": [:]]]
        let outcome = try expectSame(settings, defines: ["NO_GROUP"]) { analytics in
            analytics.group(groupId: "g1")
            analytics.track("Kept")
            _ = analytics.shutdown()
        }
        #expect(outcome.columns["skipped"] == 1 && outcome.columns["delivered"] == 1, "\(outcome)")
    }

    @Test func failuresAndRetriesAreCountedAlike() throws {
        let settings: JSONObject = ["integrations": ["Parity": [:], "Rec": [:]]]
        let outcome = try expectSame(settings) { analytics in
            analytics.track("Fail")
            analytics.track("Retry")
            analytics.track("Fine")
            _ = analytics.flush()
            _ = analytics.shutdown()
        }
        #expect(outcome.log.filter { $0 == "track Retry" }.count == 2, "retried once: \(outcome.log)")
        #expect(outcome.columns["failed"] == 1 && outcome.columns["delivered"] == 3, "\(outcome)")
        #expect(outcome.errors.count == 1 && outcome.errors[0].contains("refused Fail"), "\(outcome.errors)")
    }

    /// A durable destination (`"durable": true` in its settings: its events wait on disk until
    /// answered) is observed exactly as one whose events live in memory, in both modes; and once
    /// every event had its answer (OK, failed for good, or retried and then OK) its queue on disk
    /// holds nothing.
    @Test func aDurableDestinationIsObservedAsAnyOtherAndEndsWithAnEmptyQueue() throws {
        /// Per run: whether the queue directory existed while the client ran, and what it held after.
        let queues = Locked<[(existed: Bool, pending: Int?)]>([])
        func scenario(_ analytics: Analytics) {
            analytics.identify(userId: "u1", traits: ["plan": "pro"])
            analytics.track("Buy", properties: ["price": 1.5])
            analytics.track("Fail")
            analytics.track("Retry")
            analytics.screen("Home")
            _ = analytics.flush()
            analytics.reset()
            analytics.track("After")
            let directory = analytics.configuration.storageDirectory + "/destinations/Parity"
            let existed = FileManager.default.fileExists(atPath: directory)
            _ = analytics.shutdown()
            let queue = try? DurableQueue(directory: directory)
            queues.withLock { $0.append((existed, queue?.pendingEvents)) }
            try? queue?.close()
        }
        let plain = try run(.inProcess, settings: ["integrations": ["Parity": ["mark": "one"], "Rec": [:]]], scenario: scenario)
        #expect(queues.withLock { $0.map(\.existed) } == [false], "a destination in memory has no queue on disk")
        queues.withLock { $0 = [] }
        let durable = try expectSame(["integrations": ["Parity": ["mark": "one", "durable": true], "Rec": [:]]], scenario)
        #expect(durable == plain, "durable:\n\(durable)\nin memory:\n\(plain)")
        let seen = queues.withLock { $0 }
        #expect(seen.map(\.existed) == [true, true], "the queue lives in the client's storage, in both modes")
        #expect(seen.map(\.pending) == [0, 0], "every answered event was crossed off")
    }

    /// A hook that never returns. By design the modes differ here: in-process the destination is
    /// abandoned (its thread cannot be stopped, so it is never called again); in process mode its
    /// runner is killed and restarted, the item that hung fails after its attempts and later
    /// events are delivered. Both count and report the event that hung; neither stops the others.
    @Test func aHungHookDiffersByDesignAndIsReportedInBoth() throws {
        let settings: JSONObject = ["integrations": ["Parity": [:], "Rec": [:]]]
        func scenario(_ analytics: Analytics) {
            analytics.track("Hang")
            analytics.track("After")
            _ = analytics.flush()
            _ = analytics.shutdown()
        }
        let fast: (inout Configuration) -> Void = { $0.hookTimeout = 0.5; $0.flushTimeout = 3 }
        let inProcess = try run(.inProcess, settings: settings, configure: fast, scenario: scenario)
        let process = try run(.process, settings: settings, configure: fast, scenario: scenario)
        for outcome in [inProcess, process] {
            #expect(outcome.received == ["Hang", "After"], "other destinations go on: \(outcome.received)")
            #expect(outcome.errors.contains { $0.contains("track") }, "the hang is reported: \(outcome.errors)")
        }
        #expect(inProcess.columns["abandoned"] ?? 0 >= 1, "\(inProcess.columns)")
        #expect(process.columns["failed"] ?? 0 >= 1 && process.log.contains("track After"), "\(process)")
    }
}
