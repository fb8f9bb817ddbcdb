import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// Mixpanel end to end from `analytics-host run`, in-process and in a runner process
/// (`--isolate`), to its strict fake: batches, refusals one record at a time, splits, and the
/// vendor's Retry-After honoured by the host's retry (AH_EXT_RETRY_AFTER), for Amplitude too.
@Suite(.serialized) struct MixpanelRunCommandTests {
    static func tracks(_ count: Int, future: Set<Int> = []) -> [String] {
        (0..<count).map { n in
            let time = future.contains(n) ? #","timestamp":"2099-01-01T00:00:00Z""# : ""
            return #"{"type":"track","event":"Item Viewed","userId":"user-\#(n % 9)","messageId":"m-\#(n)"\#(time),"properties":{"n":\#(n),"label":"ünïcödé 😀 \#(n)"}}"#
        }
    }

    func settings(_ fake: MixpanelFake, _ extra: String = "") -> String {
        #"{"Mixpanel":\#(MixpanelBuild.settings(fake, extra))}"#
    }

    @Test(arguments: [false, true])
    func aThousandEventsArriveInBatchesOfAtMostTheBatchSize(isolated: Bool) throws {
        let dir = makeTempDirectory("mixpanel-batch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        let result = try MixpanelBuild.run(integrations: settings(fake, #""batchSize":300"#), events: Self.tracks(1000), isolated: isolated, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(MixpanelBuild.row("Mixpanel", in: result.stdout) == [1000, 1000, 0, 0, 0, 0, 0], "\(result.stdout)")
        #expect(fake.uniqueEvents.count == 1000)
        #expect(Set(fake.events.compactMap { $0["properties"]?["n"]?.intValue }) == Set(0..<1000))
        #expect(fake.events.first { $0["properties"]?["n"] == 999 }?["properties"]?["label"] == "ünïcödé 😀 999")
        let sizes = fake.server.requests.compactMap { (try? JSON(parsing: $0.body))?.arrayValue?.count }
        #expect(sizes.allSatisfy { $0 <= 300 }, "\(sizes)")
        #expect(fake.server.requestCount <= 100, "\(fake.server.requestCount) requests for 1,000 events: the calls finish later, in batches")
    }

    @Test(arguments: [false, true])
    func theRecordsMixpanelRefusesFailAloneAndTheOthersAreIn(isolated: Bool) throws {
        let dir = makeTempDirectory("mixpanel-refusal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        let result = try MixpanelBuild.run(integrations: settings(fake), events: Self.tracks(60, future: [7, 41]), isolated: isolated, in: dir)
        let counts = try #require(MixpanelBuild.row("Mixpanel", in: result.stdout), "\(result.stdout)\n\(result.stderr)")
        #expect(counts[0] == 60 && counts[4] == 2, "offered 60, failed 2: \(result.stdout)")
        #expect(Set(fake.uniqueEvents.compactMap { $0["properties"]?["$insert_id"]?.stringValue }) == Set((0..<60).filter { ![7, 41].contains($0) }.map { "m-\($0)" }))
        #expect(result.stderr.contains("refused the event m-7") && result.stderr.contains("refused the event m-41"), "\(result.stderr)")
        #expect(result.stderr.contains("more than an hour in the future"))
        #expect(!fake.refused.contains { $0.hasPrefix("400 record") && !$0.contains("m-7") && !$0.contains("m-41") })
    }

    @Test func aTooLargeRequestIsSplitUntilEveryEventFits() throws {
        let dir = makeTempDirectory("mixpanel-split")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        fake.maxBodyBytes = 4_000
        let result = try MixpanelBuild.run(integrations: settings(fake), events: Self.tracks(200), isolated: false, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(MixpanelBuild.row("Mixpanel", in: result.stdout)?[1] == 200, "\(result.stdout)")
        #expect(fake.uniqueEvents.count == 200)
        #expect(fake.refused.contains { $0.hasPrefix("413") }, "some request was too large and split")
    }

    @Test func identifyPageGroupAndAliasGoToTheirEndpointsFromTheRunCommand() throws {
        let dir = makeTempDirectory("mixpanel-calls")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        let events = [
            #"{"type":"identify","userId":"user-42","anonymousId":"anon-1","messageId":"m-1","traits":{"email":"zoe@example.com","name":"Zoë 😀"}}"#,
            #"{"type":"track","event":"Bought","userId":"user-42","messageId":"m-2","properties":{"revenue":9.5,"big":12345678901234567890}}"#,
            #"{"type":"page","name":"Pricing","userId":"user-42","messageId":"m-3"}"#,
            #"{"type":"group","userId":"user-42","groupId":"g-1","messageId":"m-4","traits":{"name":"Initech"}}"#,
            #"{"type":"alias","userId":"user-42","previousId":"anon-1","messageId":"m-5"}"#,
            #"{"type":"track","event":"Not Here","userId":"user-42","messageId":"m-6","integrations":{"Mixpanel":false}}"#,
        ]
        let result = try MixpanelBuild.run(integrations: settings(fake), events: events, isolated: false, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(fake.events.map { $0["event"]?.stringValue } == ["$identify", "Bought", "Viewed Pricing", "$merge"])
        // The $append goes once its event was delivered, so it may come after the group's $union.
        #expect(fake.profileUpdates.compactMap { $0.keys.first { $0.hasPrefix("$") && !["$token", "$distinct_id", "$time", "$ip"].contains($0) } }.sorted() == ["$append", "$set", "$union"])
        #expect(fake.groupUpdates.map { $0["$group_id"] } == ["g-1"])
        #expect(fake.server.requests.contains { $0.bodyText.contains(#""big":12345678901234567890"#) })
    }

    /// The wait between the first request carrying `marker` (answered 429 with Retry-After: 2)
    /// and the next one carrying it (the host's retry of that call; other calls may go between).
    func retryGap(_ requests: [RecordedRequest], _ times: [Double], marker: String) -> Double? {
        let carrying = zip(requests, times).filter { $0.0.bodyText.contains(marker) }.map(\.1)
        return carrying.count >= 2 ? carrying[1] - carrying[0] : nil
    }

    @Test(arguments: [false, true])
    func mixpanelsRetryAfterSetsTheHostsWaitBeforeTheRetry(isolated: Bool) throws {
        let dir = makeTempDirectory("mixpanel-retry")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try MixpanelFake()
        fake.failNext(.status(429, headers: [("Retry-After", "2")], body: #"{"error":"rate limited","status":0}"#))
        let result = try MixpanelBuild.run(integrations: settings(fake), events: Self.tracks(10), isolated: isolated, in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(MixpanelBuild.row("Mixpanel", in: result.stdout)?[1] == 10, "\(result.stdout)")
        #expect(fake.uniqueEvents.count == 10)
        let gap = try #require(retryGap(fake.server.requests, fake.requestTimes, marker: #""$insert_id":"m-0""#))
        #expect(gap >= 1.9, "the host's backoff alone is 0.1 s; Retry-After asked for 2 s, waited \(gap)")
        #expect(gap < 10)
    }

    @Test(arguments: [false, true])
    func amplitudesRetryAfterSetsTheHostsWaitBeforeTheRetry(isolated: Bool) throws {
        let dir = makeTempDirectory("amplitude-retry")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try AmplitudeFake()
        fake.failNext(.status(429, headers: [("Retry-After", "2")], body: #"{"code":429,"error":"Too many requests for some devices and users"}"#))
        let plugins = dir + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try AmplitudeBuild.library(in: dir), toPath: plugins + "/libamplitude.so")
        try #"{"integrations":{"Amplitude":{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage"]
        if isolated { arguments.append("--isolate") }
        let events = (0..<10).map { #"{"type":"track","event":"E","userId":"user-\#($0)","messageId":"m-\#($0)"}"# }
        let result = try HostBinary.run(arguments, stdin: events.joined(separator: "\n") + "\n", in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(fake.uniqueEvents.count == 10)
        let gap = try #require(retryGap(fake.server.requests, fake.requestTimes, marker: #""insert_id":"m-0""#))
        #expect(gap >= 1.9, "Retry-After asked for 2 s, waited \(gap)")
    }
}
