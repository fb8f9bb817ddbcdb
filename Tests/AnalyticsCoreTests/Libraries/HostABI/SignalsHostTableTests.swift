import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// AH_EXT_SIGNALS through a real C library (Tests/Fixtures/signals_probe.c) loaded by a client, in
/// the host's process and in its own (`"isolation": "process"`): the library cannot tell.
@Suite struct SignalsHostTableTests {
    private func client(held: Bool, signals: Bool = true, mode: IsolationMode) throws -> (Analytics, String, LogLines, String) {
        let dir = makeTempDirectory("loader")
        try FixtureBuilder.library("signals_probe", in: dir)
        let out = dir + "/signals.ndjson"
        let lines = LogLines()
        let (analytics, _) = makeClient {
            $0.pluginsDirectory = dir
            $0.defaultSettings = Settings(["integrations": ["SignalsProbe": ["out": .string(out), "held": .bool(held)]]])
            $0.logHandler = lines.logHandler
            if signals { $0.signals = quietSignals() }
            if mode == .process {
                $0.isolation = IsolationConfiguration(byKey: ["SignalsProbe": .process])
                $0.isolation.grants["SignalsProbe"] = JailGrants(files: [dir])  // its output file
                makeRunnerWritable(dir)
                $0.isolation.scanCacheFile = ""
            }
        }
        #expect(analytics.isolatedLibraries.map(\.key) == (mode == .process ? ["SignalsProbe"] : []))
        return (analytics, out, lines, dir)
    }

    /// What the library's hooks did so far (set_ready, …) took effect and every signal emitted so
    /// far reached it (in process mode: crossed to its runner, whose flush first delivers what
    /// its hub holds).
    private func settle(_ analytics: Analytics) {
        #expect(analytics.flush())
        #expect(analytics.signals?.flush(timeout: 5) == true)
        #expect(analytics.flush())
    }

    private func written(_ path: String) -> [String] {
        (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func aLibraryEmitsSubscribesHeldAndIsReplayedInOrder(mode: IsolationMode) throws {
        let (analytics, out, lines, dir) = try client(held: true, mode: mode)
        defer { FixtureBuilder.remove(dir) }
        let signals = try #require(analytics.signals)
        signals.emit(NavigationSignal(action: .entering, screen: "Home"))
        settle(analytics)
        #expect(written(out).isEmpty)  // held
        analytics.track("ready")
        settle(analytics)
        let got = written(out).compactMap { parseObject(Array($0.utf8)) }
        #expect(got.compactMap { $0["index"]?.intValue } == [0, 1, 2])
        #expect(got.first?["data"] == ["from": "c"] && got.first?["type"] == "userDefined")
        #expect(got.dropFirst().first?["data"]?["screen"] == "Home")
        #expect(got.last?["data"]?["rawEvent"]?["event"] == "ready")
        #expect(lines.all.contains("SignalsProbe: set_ready=0"))

        analytics.track("bad")
        analytics.track("config")
        #expect(analytics.flush())
        #expect(lines.all.contains { $0.hasPrefix("SignalsProbe: emit status=2 reason=invalid signal: \"data.action\" is \"sideways\"") })
        #expect(lines.all.contains { $0.hasPrefix("SignalsProbe: config(") && $0.contains("\"maximumBufferSize\":1000") && $0.contains("\"relayCount\":20") })

        analytics.track("today")
        #expect(analytics.flush())
        settle(analytics)
        #expect(lines.all.contains("SignalsProbe: today status=0 bad status=2 reason=invalid signal: missing \"data.target.component\""), "\(lines.all)")
        #expect(written(out).contains { $0.contains(#""data":{"target":{"component":"button","title":"Buy"}}"#) }, "today's shape as it was emitted")

        analytics.track("unsubscribe")
        #expect(analytics.flush())
        settle(analytics)
        #expect(lines.all.contains("SignalsProbe: unsubscribe=0 again=2"))
        #expect(written(out).last == "released")
        let count = written(out).count
        signals.emit(userDefined: ["after": true])
        settle(analytics)
        #expect(written(out).count == count)  // nothing after unsubscribe
        analytics.shutdown()
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func destroyRemovesTheLibrarysSubscribers(mode: IsolationMode) throws {
        let (analytics, out, _, dir) = try client(held: false, mode: mode)
        defer { FixtureBuilder.remove(dir) }
        let signals = try #require(analytics.signals)
        signals.emit(userDefined: ["n": 1])
        settle(analytics)
        #expect(written(out).count == 2)
        analytics.shutdown()
        // `release` reads the instance that `destroy` frees: it must have run before it.
        #expect(written(out).suffix(2) == ["released", "destroyed"])
    }

    @Test(arguments: [IsolationMode.inProcess, .process]) func withoutSignalsTheTableIsNotOffered(mode: IsolationMode) throws {
        let (analytics, out, _, dir) = try client(held: false, signals: false, mode: mode)
        defer { FixtureBuilder.remove(dir) }
        #expect(analytics.signals == nil)
        #expect(written(out) == ["no-signals"])
        analytics.shutdown()
    }
}
