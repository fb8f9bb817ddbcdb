import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// LivePlugins (JavaScriptCore) as a process-mode library: the seed's plugins run in its runner,
/// their verdicts cross back, and the memory limit does not stop JavaScriptCore from starting.
@Suite(.enabled(if: LiveLibrary.available, "\(LiveLibrary.missing ?? "")"))
struct IsolationLiveTests {
    /// The seed's FixProductViewed and the Amplitude-scoped RemoveAdvertisingId, in the runner, at
    /// the default memory limit where the host may make a memory cgroup (elsewhere without a limit:
    /// see the next test).
    @Test func theSeedsPluginsRunInTheirOwnProcess() throws {
        let client = try LiveClient.start(bundle: LivePluginsTests.seedBundle) {
            $0.isolation.byKey["LivePlugins"] = .process
            $0.isolation.scanCacheFile = ""
            if IsolatedCgroup.unavailableReason != nil { $0.isolation.memoryLimitBytes = 0 }
        }
        defer { client.analytics.shutdown() }
        #expect(client.analytics.isolatedLibraries.map(\.key) == ["LivePlugins"])
        try LivePluginsTests.expectSeedEffects(client)
    }

    /// Under an address-space limit below what JavaScriptCore reserves at start, its runner dies
    /// while creating the instance, and the report says what to change.
    @Test(.disabled(if: ThreadSanitizer.isActive, "RLIMIT_AS is not applied under ThreadSanitizer"))
    func tooSmallAnAddressSpaceIsExplained() throws {
        let client = try LiveClient.start(bundle: LivePluginsTests.seedBundle) {
            $0.isolation.byKey["LivePlugins"] = .process
            $0.isolation.scanCacheFile = ""
            $0.isolation.memoryLimit = .addressSpace
            $0.isolation.maxCrashes = 1
        }
        defer { client.analytics.shutdown() }
        // The runner's start is reported from the library's own thread: wait for it.
        #expect(client.observer.waitFor("while creating the instance"))
        let report = try #require(client.observer.errorMessages.first { $0.contains("while creating the instance") },
                                  "\(client.observer.errorMessages)")
        #expect(report.contains("its address space is limited to 2147483648 bytes, RLIMIT_AS"), "\(report)")
        #expect(report.contains("needs a higher --isolate-memory, 0, or a memory cgroup"), "\(report)")
        // The rest of the client goes on without the library.
        client.analytics.track("After")
        #expect(client.analytics.flush())
        #expect(client["Mixpanel"].events.map(\.event) == ["After"])
    }
}
