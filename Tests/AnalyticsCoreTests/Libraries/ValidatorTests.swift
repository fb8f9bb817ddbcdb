import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `analytics-host validate` (LibraryValidator, each check in a runner process) against libraries
/// built from Tests/Fixtures/broken.c with one deliberate fault each, and a well-behaved one.
@Suite struct ValidatorTests {
    func findings(_ defines: [String], timeout: Double = 20) throws -> [String: LibraryValidator.Finding] {
        let directory = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(directory) }
        let file = try FixtureBuilder.library("broken", in: directory, as: "libbroken.so", defines: defines)
        let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
        let all = LibraryValidator.validate(file: file, settings: [:], runner: runner, timeout: timeout)
        #expect(all.map(\.check) == LibraryValidator.checks.map(\.name))
        return Dictionary(uniqueKeysWithValues: all.map { ($0.check, $0) })
    }

    @Test func aWellBehavedLibraryPassesEveryCheck() throws {
        let f = try findings([])
        #expect(f.values.allSatisfy { $0.verdict == .pass }, "\(f.values.map { "\($0.check): \($0.detail)" })")
    }

    @Test func aCrashInCreateIsAFindingNotTheEnd() throws {
        let f = try findings(["CRASH_IN_CREATE"])
        #expect(f["load"]?.verdict == .pass)
        #expect(f["create-empty"]?.verdict == .fail)
        #expect(f["create-empty"]?.detail.hasPrefix("the library crashed (signal 11") == true)
    }

    @Test func aHookThatHangsFailsWithinTheTimeout() throws {
        let f = try findings(["HANG_IN_TRACK"], timeout: 3)
        #expect(f["hooks-fuzz"]?.verdict == .fail)
        #expect(f["hooks-fuzz"]?.detail.contains("did not finish within 3.0 s") == true)
    }

    @Test func aThreadLeftAfterDestroyIsFound() throws {
        let f = try findings(["THREAD_LEFT"])
        #expect(f["leftovers"]?.verdict == .fail)
        #expect(f["leftovers"]?.detail == "1 thread still running after destroy (stop every thread in destroy)")
        #expect(f["hooks-fuzz"]?.verdict == .pass)
    }

    @Test func aDurableQueueThatCannotHoldAnEventIsFound() throws {
        let f = try findings(["DURABLE_TINY_CAP"])
        #expect(f["durable"]?.verdict == .fail)
        #expect(f["durable"]?.detail.hasPrefix("ah_durable.max_disk_bytes 1024: invalid queue configuration: maxDiskBytes 1024 is smaller than") == true, "\(f["durable"]?.detail ?? "")")
        #expect(f["load"]?.verdict == .pass)
    }

    @Test func aTokenCompletedTwiceIsFound() throws {
        let f = try findings(["COMPLETE_TWICE"])
        #expect(f["completions"]?.verdict == .fail)
        #expect(f["completions"]?.detail.contains("which is not pending (completed twice") == true)
        #expect(f["create-empty"]?.verdict == .pass)
    }
}
