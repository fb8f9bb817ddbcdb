// swift-tools-version:6.0
import PackageDescription

// analytics-host: a Segment-style analytics client for Linux whose device-mode destinations are
// shared libraries loaded at start-up through the C ABI in include/analytics_plugin.h.
// No package dependencies: the Swift toolchain and zlib only.

let package = Package(
    name: "analytics-host",
    products: [
        .library(name: "AnalyticsCore", targets: ["AnalyticsCore"]),
        .library(name: "AnalyticsIntegration", targets: ["AnalyticsIntegration"]),
        .executable(name: "analytics-host", targets: ["analytics-host"]),
        .executable(name: "analytics-bench", targets: ["analytics-bench"]),
        // The child process of process isolation: loads one library, serves it over pipes.
        .executable(name: "analytics-plugin-runner", targets: ["analytics-plugin-runner"]),
        // Example integrations written in Swift: each a shared library the host loads at start-up.
        .library(name: "WebhooksIntegration", type: .dynamic, targets: ["WebhooksIntegration"]),
        .library(name: "MetricsIntegration", type: .dynamic, targets: ["MetricsIntegration"]),
        // Real vendor destinations written in Swift (docs/vendors/).
        .library(name: "PostHogIntegration", type: .dynamic, targets: ["PostHogIntegration"]),
        .library(name: "GoogleAnalytics4Integration", type: .dynamic, targets: ["GoogleAnalytics4Integration"]),
        // Test fixture: a Swift integration answering later through the kit (linked into build/fixtures).
        .library(name: "LaterFixtureIntegration", type: .dynamic, targets: ["LaterFixtureIntegration"]),
        .library(name: "DurableFixtureIntegration", type: .dynamic, targets: ["DurableFixtureIntegration"]),
    ],
    targets: [
        // The C ABI shared by the host and every integration library (header only).
        .systemLibrary(name: "CAnalyticsABI", path: "include"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .systemLibrary(name: "CProcessControl", path: "Sources/CProcessControl"),
        .target(name: "AnalyticsCore", dependencies: ["CAnalyticsABI", "CZlib", "CProcessControl"]),
        .target(name: "AnalyticsIntegration", dependencies: ["AnalyticsCore", "CAnalyticsABI"]),
        .executableTarget(name: "analytics-host", dependencies: ["AnalyticsCore", "LoopbackHTTP"]),
        // What the runner restricts for itself before it opens a library (C: prctl, rlimits).
        .target(name: "CRunnerSandbox", path: "Sources/CRunnerSandbox"),
        .executableTarget(name: "analytics-plugin-runner", dependencies: ["AnalyticsCore", "CRunnerSandbox"]),
        .executableTarget(name: "analytics-bench", dependencies: ["AnalyticsCore", "AnalyticsTestSupport"]),
        // Swift integrations: unique module names (the Swift runtime looks types up by module).
        // The libraries loaded by the host are linked by `make plugins` from these products' objects
        // with Plugins/swift-plugin.exports (only the ABI entry function exported): no unsafe flags
        // here, so other packages can depend on this one.
        .target(name: "WebhooksIntegration", dependencies: ["AnalyticsIntegration"], path: "Plugins/Webhooks"),
        .target(name: "MetricsIntegration", dependencies: ["AnalyticsIntegration"], path: "Plugins/Metrics"),
        .target(name: "PostHogIntegration", dependencies: ["AnalyticsIntegration"], path: "Plugins/PostHog"),
        .target(name: "GoogleAnalytics4Integration", dependencies: ["AnalyticsIntegration"], path: "Plugins/GoogleAnalytics4"),
        .target(name: "LaterFixtureIntegration", dependencies: ["AnalyticsIntegration"], path: "Tests/SwiftFixtures/Later"),
        .target(name: "DurableFixtureIntegration", dependencies: ["AnalyticsIntegration"], path: "Tests/SwiftFixtures/Durable"),
        // A real HTTP/1.1 server on 127.0.0.1: `analytics-host receive`, the tests and the benchmark.
        .target(name: "LoopbackHTTP", dependencies: ["AnalyticsCore"]),
        // Helpers for tests and the benchmark (re-exports LoopbackHTTP).
        .target(name: "AnalyticsTestSupport", dependencies: ["AnalyticsCore", "LoopbackHTTP"], path: "Tests/AnalyticsTestSupport"),
        .testTarget(name: "AnalyticsCoreTests", dependencies: ["AnalyticsCore", "AnalyticsTestSupport"]),
        // The command line (`analytics-host run`, `receive`, `plugins`, install): tests that run the built
        // executables as child processes.
        .testTarget(name: "AnalyticsHostCommandTests", dependencies: ["AnalyticsCore", "AnalyticsTestSupport"]),
        // The vendor integrations' mapping and delivery code, tested directly against loopback fakes
        // of the vendors' APIs (the loaded libraries are tested in AnalyticsCoreTests/Vendors).
        .testTarget(name: "VendorIntegrationTests", dependencies: ["PostHogIntegration", "AnalyticsTestSupport"]),
        // Test-only helper: a process the durable-queue crash test SIGKILLs mid-stream.
        .executableTarget(name: "queue-crash-child", dependencies: ["AnalyticsCore"], path: "Tests/QueueCrashChild"),
        // The vendor fakes (Amplitude, PostHog) as a process, for `make run-vendors`.
        .executableTarget(name: "vendor-fake", dependencies: ["AnalyticsCore", "LoopbackHTTP"], path: "Tests/VendorFake"),
        // Test-only helper: a client streaming to the Segment.io destination, SIGKILLed by its tests.
        .executableTarget(name: "segment-crash-child", dependencies: ["AnalyticsCore"], path: "Tests/SegmentCrashChild"),
    ],
    swiftLanguageModes: [.v6]
)
