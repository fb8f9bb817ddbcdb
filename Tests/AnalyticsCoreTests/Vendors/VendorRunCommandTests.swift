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
        #expect(amplitude.events.map { $0["event_type"]?.stringValue } == ["$identify", "Shared", "Amplitude Only", "Viewed Pricing Page"])
        #expect(posthog.events.map { $0["event"]?.stringValue } == ["$identify", "Shared", "PostHog Only", "$pageview"])
        #expect(amplitude.events.map { $0["insert_id"]?.stringValue } == ["m-1", "m-2", "m-3", "m-5"])
        #expect(amplitude.events[0]["user_properties"]?["$set"]?["name"] == "Zoë 😀")
        #expect(amplitude.server.requests[1].bodyText.contains(#""big":12345678901234567890"#))
        #expect(posthog.server.requests[1].bodyText.contains(#""big":12345678901234567890"#))
    }
}
