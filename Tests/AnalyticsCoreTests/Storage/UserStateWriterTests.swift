import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// User state is saved off the caller's path: coalesced, written whole, on disk after flush.
@Suite struct UserStateWriterTests {
    func client(_ dir: String) -> Analytics {
        var config = Configuration(writeKey: "k", storageDirectory: dir)
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        return Analytics(configuration: config)
    }

    func saved(_ dir: String) throws -> UserState? {
        guard let data = FileManager.default.contents(atPath: dir + "/user.json") else { return nil }
        return UserState(json: try JSON(parsing: data))
    }

    @Test func aBurstOfIdentifiesIsWrittenAFewTimesAndTheLastStateWins() throws {
        let dir = makeTempDirectory("user-burst")
        let analytics = client(dir)
        for i in 0..<10_000 { analytics.identify(userId: "u-\(i)", traits: ["i": .number(Double(i))]) }
        #expect(analytics.flush())
        // Before: one write (and sync) per identify, 10,000 here.
        #expect(analytics.userWriter.writes < 1_000, "\(analytics.userWriter.writes) writes")
        let state = try #require(try saved(dir))
        #expect(state.userId == "u-9999" && state.traits["i"] == 9999)
        analytics.shutdown()
    }

    @Test func flushAndShutdownPutTheStateOnDisk() throws {
        let dir = makeTempDirectory("user-flush")
        let analytics = client(dir)
        analytics.identify(userId: "before-flush")
        #expect(analytics.flush())
        #expect(try saved(dir)?.userId == "before-flush", "on disk when flush returns")
        analytics.alias("before-shutdown")
        #expect(analytics.shutdown())
        #expect(try saved(dir)?.userId == "before-shutdown", "on disk when shutdown returns")
        #expect(!FileManager.default.fileExists(atPath: dir + "/user.json.tmp"))
    }

    /// `analytics-host run` killed (SIGKILL) at random moments while it reads identify calls that
    /// each rewrite the state: the file on disk is always one whole, consistent state.
    @Test func aKilledProcessNeverLeavesATornState() throws {
        let dir = makeTempDirectory("user-kill")
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        try #"{"integrations":{}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var input = ""
        for k in 0..<60_000 {
            input += #"{"type":"identify","userId":"u-\#(k)","traits":{"k":\#(k),"blob":"\#(String(repeating: "x", count: k % 700))"}}"# + "\n"
        }
        try input.write(toFile: dir + "/input.ndjson", atomically: true, encoding: .utf8)
        var checked = 0
        for round in 0..<8 {
            let storage = dir + "/s\(round)"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try HostBinary.path())
            // --device: the stored user is device mode's (server mode stores none).
            process.arguments = ["run", "--device", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins",
                                 "--storage", storage, "--input", dir + "/input.ndjson", "--quiet"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Kill at a random moment once the first state is written.
            let deadline = monotonicSeconds() + 30
            while monotonicSeconds() < deadline, !FileManager.default.fileExists(atPath: storage + "/user.json"), process.isRunning {
                usleep(1000)
            }
            usleep(UInt32.random(in: 0...400_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            guard let data = FileManager.default.contents(atPath: storage + "/user.json") else { continue }
            let state = try #require(UserState(json: try JSON(parsing: data)), "round \(round): a whole state")
            guard let userId = state.userId else { continue }  // killed before the first identify was saved
            let k = try #require(Int(userId.dropFirst(2)))
            #expect(state.traits["k"] == .number(Double(k)), "round \(round): traits of the same identify")
            #expect(state.traits["blob"]?.stringValue?.count == k % 700, "round \(round)")
            checked += 1
        }
        #expect(checked >= 4, "most rounds were killed with a saved identify")
    }
}
