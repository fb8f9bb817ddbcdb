import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Amplitude (C) and PostHog (Swift) end to end from `analytics-host run`, created because the
/// settings name them, routed by the per-call `integrations` option like every destination,
/// in-process and in runner processes (`--isolate`), to their strict fakes.
@Suite(.serialized) struct VendorRunCommandTests {
    @Test(arguments: [false, true])
    func bothVendorsReceiveWhatTheirIntegrationsOptionAllows(isolated: Bool) throws {
        let dir = makeTempDirectory("vendors-run")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try AmplitudeBuild.library(in: dir), toPath: plugins + "/libamplitude.so")
        let posthogFile = SwiftPluginFiles.path("PostHogIntegration")
        _ = try SwiftPluginFiles.load("PostHogIntegration") // fails clearly when `make plugins` is stale
        try FileManager.default.copyItem(atPath: posthogFile, toPath: plugins + "/libPostHogIntegration.so")

        let amplitude = try AmplitudeFake(), posthog = try PostHogFake()
        // Both send through the host's HTTP requests (ABI 1.3): a jailed runner needs no network grant.
        let settings = #"{"integrations":{"Amplitude":{"apiKey":"\#(amplitude.apiKey)","apiHost":"\#(amplitude.baseURL)"},"PostHog":{"apiKey":"\#(posthog.projectKey)","apiHost":"\#(posthog.baseURL)"}}}"#
        try settings.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let input = [
            #"{"type":"identify","userId":"user-42","messageId":"m-1","traits":{"name":"Zoë 😀"}}"#,
            #"{"type":"track","event":"Shared","userId":"user-42","messageId":"m-2","properties":{"big":12345678901234567890}}"#,
            #"{"type":"track","event":"Amplitude Only","userId":"user-42","messageId":"m-3","integrations":{"PostHog":false}}"#,
            #"{"type":"track","event":"PostHog Only","userId":"user-42","messageId":"m-4","integrations":{"All":false,"PostHog":true}}"#,
            #"{"type":"page","name":"Pricing","userId":"user-42","messageId":"m-5"}"#,
        ].joined(separator: "\n") + "\n"
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage", "--quiet"]
        if isolated { arguments.append("--isolate") }
        let result = try HostBinary.run(arguments, stdin: input, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(amplitude.events.map { $0["event_type"]?.stringValue } == ["$identify", "Shared", "Amplitude Only", "Viewed Pricing"])
        // Requests run side by side (one person's changes in order): arrival order may differ.
        #expect(posthog.events.compactMap { $0["event"]?.stringValue }.sorted() == ["$identify", "$pageview", "PostHog Only", "Shared"])
        #expect(amplitude.events.map { $0["insert_id"]?.stringValue } == ["m-1", "m-2", "m-3", "m-5"])
        #expect(amplitude.events[0]["user_properties"]?["$set"]?["name"] == "Zoë 😀")
        #expect(amplitude.server.requests.contains { $0.bodyText.contains(#""big":12345678901234567890"#) })
        #expect(posthog.server.requests.contains { $0.bodyText.contains(#""big":12345678901234567890"#) })
    }

    /// A plugins directory holding the Amplitude library only, and settings pointing it at `fake`.
    func amplitudeRun(_ fake: AmplitudeFake, events: [String], isolated: Bool, in dir: String) throws -> FixtureBuilder.ProcessOutput {
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try AmplitudeBuild.library(in: dir), toPath: plugins + "/libamplitude.so")
        try #"{"integrations":{"Amplitude":{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage"]
        if isolated { arguments.append("--isolate") }
        return try HostBinary.run(arguments, stdin: events.joined(separator: "\n") + "\n", in: dir)
    }

    /// The summary row of a destination: offered, delivered, dropped, skipped, failed, queued, abandoned.
    func row(_ name: String, in stdout: String) -> [Int]? {
        for line in stdout.split(separator: "\n") {
            let cells = line.split(separator: " ")
            // Process mode adds columns (retried, restarts) after these seven.
            if cells.first.map(String.init) == name, cells.count >= 8 { return Array(cells.dropFirst().prefix(7).compactMap { Int($0) }) }
        }
        return nil
    }

    @Test(arguments: [false, true])
    func aThousandEventsAllArriveInBatchesWhenCallsMayFinishLater(isolated: Bool) throws {
        let dir = makeTempDirectory("vendors-batch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try AmplitudeFake()
        let events = (0..<1000).map { #"{"type":"track","event":"Item Viewed","userId":"user-\#($0 % 9)","messageId":"m-\#($0)","properties":{"n":\#($0)}}"# }
        let result = try amplitudeRun(fake, events: events, isolated: isolated, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(row("Amplitude", in: result.stdout) == [1000, 1000, 0, 0, 0, 0, 0], "\(result.stdout)")
        #expect(fake.uniqueEvents.count == 1000)
        #expect(Set(fake.events.compactMap { $0["event_properties"]?["n"]?.intValue }) == Set(0..<1000))
        // The host lets calls finish later in both modes: the events travel in batches.
        #expect(fake.server.requestCount <= 100, "\(fake.server.requestCount) requests for 1,000 events")
    }

    /// A pending call refused for good is counted as a synchronous failure is (failed, and not
    /// delivered), with the same summary columns in-process and in process mode.
    @Test(arguments: [false, true])
    func inBatchesARefusedEventFailsAloneAndAServerErrorIsRetriedByTheHost(isolated: Bool) throws {
        let dir = makeTempDirectory("vendors-refusal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try AmplitudeFake()
        fake.failNext(.status(503, body: "unavailable"))
        let events = (0..<40).map { #"{"type":"track","event":"E","userId":"\#([7, 23].contains($0) ? "u\($0)" : "user-\($0)")","messageId":"m-\#($0)"}"# }
        let result = try amplitudeRun(fake, events: events, isolated: isolated, in: dir)
        #expect(row("Amplitude", in: result.stdout) == [40, 38, 0, 0, 2, 0, 0], "\(result.stdout)")
        #expect(Set(fake.uniqueEvents.compactMap { $0["insert_id"]?.stringValue }) == Set((0..<40).filter { ![7, 23].contains($0) }.map { "m-\($0)" }))
        #expect(result.stderr.contains("events_with_invalid_id_lengths"), "\(result.stderr)")
    }

    @Test func inBatchesATooLargeRequestIsSplitUntilEveryEventFits() throws {
        let dir = makeTempDirectory("vendors-split")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try AmplitudeFake()
        fake.maxBodyBytes = 2_500
        let events = (0..<200).map { #"{"type":"track","event":"Item Viewed","userId":"user-\#($0 % 5)","messageId":"m-\#($0)","properties":{"n":\#($0)}}"# }
        let result = try amplitudeRun(fake, events: events, isolated: false, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(row("Amplitude", in: result.stdout)?[1] == 200, "\(result.stdout)")
        #expect(fake.uniqueEvents.count == 200)
        #expect(fake.refused.contains { $0.hasPrefix("413") }, "some request was too large and split")
        #expect(fake.server.requests.filter { $0.wireBodySize <= 2_500 }.count >= 200 / 20, "the accepted requests each fit")
    }
}
