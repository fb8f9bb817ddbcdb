// vendor-fake: the loopback fakes of Amplitude's, PostHog's, Mixpanel's and GA4's APIs as a process,
// for `make run-vendors` (the demo of the vendor libraries; nothing leaves the machine) and for
// timing `analytics-host run` through a vendor library (docs/vendors/README.md).
// Prints one "listening" line per vendor on stderr; on SIGTERM or SIGINT writes what each fake
// accepted (one JSON event per line) to OUT_DIR/<vendor>.ndjson, prints a summary, exits 0.
import AnalyticsCore
import Foundation
import Glibc
import LoopbackHTTP

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: vendor-fake OUT_DIR\n".utf8))
    exit(2)
}
let outDirectory = arguments[1]
let amplitude = try AmplitudeFake(apiKey: "demo-amplitude-key")
let posthog = try PostHogFake(projectKey: "phc_demo_project_key")
let mixpanel = try MixpanelFake(token: "demo-mixpanel-token", apiSecret: "demo-mixpanel-secret")
let ga4 = try GA4Fake(streamId: "G-DEMO12345", apiSecret: "demo-ga4-secret")
FileHandle.standardError.write(Data("""
    vendor-fake: Amplitude listening on \(amplitude.baseURL) (api key \(amplitude.apiKey))
    vendor-fake: PostHog listening on \(posthog.baseURL) (project key \(posthog.projectKey))
    vendor-fake: Mixpanel listening on \(mixpanel.baseURL) (project token \(mixpanel.token), API secret \(mixpanel.apiSecret))
    vendor-fake: Google Analytics 4 listening on \(ga4.baseURL) (measurement id \(ga4.streamId), API secret \(ga4.apiSecret))

    """.utf8))

func write(_ events: [JSONObject], to name: String) -> String {
    let text = events.map { JSON.object($0).serialized() + "\n" }.joined()
    let path = outDirectory + "/" + name
    if !FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) {
        FileHandle.standardError.write(Data("vendor-fake: cannot write \(path)\n".utf8))
    }
    return path
}

signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let stop = DispatchSemaphore(value: 0)
let sources = [SIGTERM, SIGINT].map { number -> DispatchSourceSignal in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { stop.signal() }
    source.resume()
    return source
}
stop.wait()
let a = write(amplitude.events, to: "amplitude.ndjson"), p = write(posthog.events, to: "posthog.ndjson")
let m = write(mixpanel.events + mixpanel.profileUpdates + mixpanel.groupUpdates, to: "mixpanel.ndjson")
let g = write(ga4.bodies, to: "ga4.ndjson")
FileHandle.standardError.write(Data("""
    vendor-fake: Amplitude accepted \(amplitude.events.count) events in \(amplitude.server.requestCount) requests (\(amplitude.refused.count) refused) -> \(a)
    vendor-fake: PostHog accepted \(posthog.events.count) events in \(posthog.server.requestCount) requests (\(posthog.refused.count) refused) -> \(p)
    vendor-fake: Mixpanel accepted \(mixpanel.events.count) events, \(mixpanel.profileUpdates.count) profile and \(mixpanel.groupUpdates.count) group updates in \(mixpanel.server.requestCount) requests (\(mixpanel.refused.count) refused) -> \(m)
    vendor-fake: Google Analytics 4 accepted \(ga4.events.count) events in \(ga4.server.requestCount) requests (\(ga4.violations.count) violations) -> \(g)

    """.utf8))
_ = sources
exit(0)
