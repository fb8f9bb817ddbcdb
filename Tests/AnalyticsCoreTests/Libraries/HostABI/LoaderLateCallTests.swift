import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A library that keeps calling the host after `destroy` (a bug) finds a valid table whose calls
/// do nothing, answer an error, and are reported once; the host does not crash.
@Suite struct LoaderLateCallTests {
    @Test func hostCallsAfterDestroyAreHarmlessNoOpsReportedOnce() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("late_caller", in: dir))
        let trigger = FixturePipe(), result = FixturePipe()
        let host = RecordingHost()
        do {
            let instance = try library.makeInstance(
                settings: ["trigger_fd": .number(Double(trigger.readEnd)), "result_fd": .number(Double(result.writeEnd))],
                services: host.services)
            instance.destroy()
        }  // the host keeps no reference to the instance any more
        // Reuse freed memory, as a busy host would, before the library's thread wakes up.
        var churn: [[UInt8]] = []
        for i in 0..<4096 { churn.append([UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 16 + i % 200)) }
        churn.removeAll()
        trigger.release()
        #expect(result.readLine() == "send=\(AH_ERR_PERMANENT_VALUE) user=-1 anon=-1 ext=0")
        #expect(host.sent.withLock { $0.isEmpty })
        let logs = host.logLines
        #expect(logs.count == 1)
        #expect(logs.first?.hasPrefix("called the host (log) after its instance was destroyed or abandoned; ignored") == true)
    }

    @Test func aTableKeptByAFailedCreateIsRevokedToo() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let library = try PluginLoader().load(file: try FixtureBuilder.library("late_caller", in: dir, defines: ["FAIL_CREATE"]))
        let trigger = FixturePipe(), result = FixturePipe()
        let host = RecordingHost()
        #expect(throws: PluginLoadError.self) {
            _ = try library.makeInstance(
                settings: ["trigger_fd": .number(Double(trigger.readEnd)), "result_fd": .number(Double(result.writeEnd))],
                services: host.services)
        }
        trigger.release()
        #expect(result.readLine() == "send=\(AH_ERR_PERMANENT_VALUE) user=-1 anon=-1 ext=0")
        #expect(host.sent.withLock { $0.isEmpty })
    }
}

/// AH_ERR_PERMANENT as the fixtures print it.
let AH_ERR_PERMANENT_VALUE = 2
