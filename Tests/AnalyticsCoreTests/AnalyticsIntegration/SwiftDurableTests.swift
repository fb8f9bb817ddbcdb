import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A Swift integration conforming to `DurableEvents` offers the ABI 1.3 `AH_EXT_DURABLE` table
/// through the kit's `get_extension`, with its disk cap; one that does not, offers none.
@Suite struct SwiftDurableTests {
    @Test func aDurableEventsIntegrationIsLoadedDurableWithItsCap() throws {
        let library = try SwiftPluginFiles.load("DurableFixtureIntegration")
        #expect(library.key == "DurableFixture")
        #expect(library.info.durable == NativeDurability(maxDiskBytes: 1 << 20))
    }

    @Test func anIntegrationWithoutItStaysInMemory() throws {
        let library = try SwiftPluginFiles.load("LaterFixtureIntegration")
        #expect(library.info.durable == nil)
    }

    @Test func theVendorLibrariesThatUploadLaterAreDurable() throws {
        for product in ["PostHogIntegration", "GoogleAnalytics4Integration"] {
            let library = try SwiftPluginFiles.load(product)
            #expect(library.info.durable == NativeDurability(), "\(product): durable with the host's default cap")
        }
    }
}
