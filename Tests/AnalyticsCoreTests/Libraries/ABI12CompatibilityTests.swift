import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A library built for ABI 1.2 (Tests/Fixtures/v12_minor.c) under this 1.3 host: loaded and
/// called exactly as before, in-process and in a runner process; none of 1.3's capabilities is
/// assumed, and the value 1.3 gave a meaning (AH_PENDING) stays an unknown status for it.
@Suite struct ABI12CompatibilityTests {
    @Test(arguments: [IsolationMode.inProcess, .process])
    func aLibraryBuiltFor12LoadsAndBehavesAsBefore(mode: IsolationMode) throws {
        let c = try FixtureLibraryClient(fixture: "v12_minor", key: "V12", settings: [:], mode: mode)
        let info = try PluginLoader().load(file: FixtureBuilder.library("v12_minor", in: FixtureBuilder.makeDirectory())).info
        #expect(info.abiVersion == ABIVersion(major: 1, minor: 2))
        #expect(info.hooks.names == ["track", "destroy", "lifecycle"])
        c.analytics.track("One")
        c.analytics.track("Three")
        #expect(c.analytics.flush())
        #expect(c.analytics.shutdown())
        #expect(c.lines == ["v1.2 started", "v1.2 track", "v1.2 track Three", "v1.2 stopping"])
        #expect(c.stats?.failed == 1)
        #expect(c.errors.messages.contains { $0.contains("returned unknown status 3: not a 1.2 status") })
    }
}
