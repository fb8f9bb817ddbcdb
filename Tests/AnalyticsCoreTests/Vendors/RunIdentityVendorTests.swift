import AnalyticsCore
import AnalyticsTestSupport
import Foundation
import Testing

/// What a vendor receives from `analytics-host run` in server mode (its default), through the
/// Amplitude library to its strict fake, in-process and in a runner process: each person's events
/// under that person's own ids only (no borrowed userId, no shared minted device id), the host's
/// machine nowhere, and the same messageIds (insert_id) when the input is run again.
@Suite(.serialized) struct RunIdentityVendorTests {
    static let input = [
        #"{"type":"identify","userId":"alice-1","anonymousId":"anon-alice","traits":{"plan":"pro"}}"#,
        #"{"type":"track","event":"Viewed","anonymousId":"anon-bob-1"}"#,
        #"{"type":"track","event":"Viewed","anonymousId":"anon-carol-1","context":{"os":{"name":"iOS","version":"17.1"},"device":{"type":"ios","model":"iPhone15,2"},"locale":"fr-FR"}}"#,
        #"{"type":"track","event":"Bought","userId":"alice-1"}"#,
        #"{"type":"track","event":"Viewed","anonymousId":"anon-bob-1"}"#,
    ]

    func run(_ fake: AmplitudeFake, isolated: Bool, in dir: String, storage: String) throws -> FixtureBuilder.ProcessOutput {
        let plugins = dir + "/plugins"
        if !FileManager.default.fileExists(atPath: plugins + "/libamplitude.so") {
            try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: try AmplitudeBuild.library(in: dir), toPath: plugins + "/libamplitude.so")
        }
        try #"{"integrations":{"Amplitude":{"apiKey":"\#(fake.apiKey)","apiHost":"\#(fake.baseURL)"}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        var arguments = ["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", storage, "--quiet"]
        if isolated { arguments.append("--isolate") }
        return try HostBinary.run(arguments, stdin: Self.input.joined(separator: "\n") + "\n", in: dir)
    }

    @Test(arguments: [false, true]) func eachPersonArrivesUnderTheirOwnIdsWithoutTheHostsMachine(isolated: Bool) throws {
        let dir = makeTempDirectory("run-identity-amplitude")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fake = try AmplitudeFake()
        let result = try run(fake, isolated: isolated, in: dir, storage: dir + "/storage")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let events = fake.events
        #expect(events.count == Self.input.count, "\(result.stderr)")
        let ids = events.map { [$0["user_id"]?.stringValue ?? "-", $0["device_id"]?.stringValue ?? "-"] }
        #expect(ids == [["alice-1", "anon-alice"], ["-", "anon-bob-1"], ["-", "anon-carol-1"], ["alice-1", "-"], ["-", "anon-bob-1"]],
                "each event under its own ids only")
        for e in events where e["device_id"]?.stringValue != "anon-carol-1" {
            #expect(e["os_name"] == nil && e["device_model"] == nil && e["language"] == nil && e["platform"] == nil,
                    "nothing of the host's machine: \(e)")
        }
        let carol = try #require(events.first { $0["device_id"] == "anon-carol-1" })
        #expect(carol["os_name"] == "iOS" && carol["device_model"] == "iPhone15,2" && carol["language"] == "fr-FR" && carol["platform"] == "iOS")

        // The same input again (another storage, as on another machine): the same insert_ids.
        let again = try AmplitudeFake()
        _ = try run(again, isolated: isolated, in: dir, storage: dir + "/storage-2")
        let first = events.compactMap { $0["insert_id"]?.stringValue }, second = again.events.compactMap { $0["insert_id"]?.stringValue }
        #expect(first.count == Self.input.count && first == second, "a re-run carries the same insert_ids")
        #expect(Set(first).count == first.count)
    }
}
