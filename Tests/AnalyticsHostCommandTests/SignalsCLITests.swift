import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `analytics-host run --signals FILE`, run as a user runs it; the signals are observed through a
/// webhook broadcaster (configured in the settings) on a loopback server.
@Suite struct SignalsCLITests {
    @Test func signalsAreInterleavedWithEventsByTimestampAndBadLinesNamed() throws {
        let server = try LoopbackHTTPServer()
        let dir = makeTempDirectory("cli-signals")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try #"""
            {"integrations": {"File": {"path": "\#(dir)/out.ndjson"}},
             "signals": {"relayCount": 100, "broadcasters": [{"type": "webhook", "url": "\#(server.baseURL)/signals"}]}}
            """#.write(toFile: settings, atomically: true, encoding: .utf8)
        let events = dir + "/events.ndjson"
        try """
            {"type":"screen","name":"Product","timestamp":"2026-11-23T10:00:02.000Z"}
            {"type":"track","event":"Add To Cart","timestamp":"2026-11-23T10:00:04.000Z"}
            """.write(toFile: events, atomically: true, encoding: .utf8)
        let signalsFile = dir + "/signals.ndjson"
        try """
            {"type":"navigation","data":{"action":"entering","screen":"Product"},"timestamp":"2026-11-23T10:00:01.000Z"}
            {"type":"network","data":{"action":"response","url":"http://shop.example/product/7","statusCode":200,"data":{"content":{"id":"7"}}},"timestamp":"2026-11-23T10:00:03.000Z"}
            {"type":"interaction","data":{"component":"button","title":"Add To Cart"}
            {"type":"interaction","data":{"component":"button","title":"Add To Cart"},"timestamp":"2026-11-23T10:00:05.000Z"}
            {"type":"navigation","data":{"action":"sideways","screen":"X"}}

            """.write(toFile: signalsFile, atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                         "--input", events, "--signals", signalsFile], in: dir)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("signals line 3: invalid JSON at column"))
        #expect(result.stderr.contains("signals line 5: invalid signal: \"data.action\" is \"sideways\""))
        #expect(result.stdout.contains("2 events accepted, 0 rejected"))
        #expect(result.stdout.contains("signals: 5 emitted (3 from the signals file, 2 rejected; 2 from events"), "\(result.stdout)")

        let sent = server.requests.flatMap { parseObject($0.body)?["batch"]?.arrayValue ?? [] }
        let order = sent.map { s -> String in
            let data = s["data"]
            switch s["type"]?.stringValue {
            case "instrumentation": return "event:" + (data?["rawEvent"]?["event"]?.stringValue ?? data?["rawEvent"]?["name"]?.stringValue ?? "?")
            default: return (s["type"]?.stringValue ?? "?") + ":" + (data?["screen"]?.stringValue ?? data?["url"]?.stringValue ?? data?["title"]?.stringValue ?? "?")
            }
        }
        #expect(order == ["navigation:Product", "event:Product", "network:http://shop.example/product/7", "event:Add To Cart", "interaction:Add To Cart"])
        #expect(sent.compactMap { $0["index"]?.intValue } == [0, 1, 2, 3, 4])
        #expect(sent.first?["timestamp"] == "2026-11-23T10:00:01.000Z")
        let written = try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)
        #expect(written.contains("Add To Cart"))
    }

    /// analytics-swift-live 3.x's shapes in `--signals` are accepted as they are, and a bad one is
    /// named by its field; an earlier-shape line gets today's members added.
    @Test func todaysSignalShapesAreAccepted() throws {
        let server = try LoopbackHTTPServer()
        let dir = makeTempDirectory("cli-signals-3x")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = dir + "/settings.json"
        try #"""
            {"integrations": {"File": {"path": "\#(dir)/out.ndjson"}},
             "signals": {"relayCount": 100, "broadcasters": [{"type": "webhook", "url": "\#(server.baseURL)/signals"}]}}
            """#.write(toFile: settings, atomically: true, encoding: .utf8)
        let signalsFile = dir + "/signals.ndjson"
        try """
            {"type":"navigation","data":{"currentScreen":"Cart","previousScreen":"Home"}}
            {"type":"interaction","data":{"target":{"component":"button","title":"Add to cart","data":{"sku":"A"}}}}
            {"type":"network","data":{"action":"response","url":"https://x/products/1","body":{"id":1},"status":200,"ok":true,"contentType":"application/json"}}
            {"type":"interaction","data":{"target":{"title":"no component"}}}
            {"type":"network","data":{"action":"response","url":"https://x/products/2","statusCode":404}}

            """.write(toFile: signalsFile, atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                         "--signals", signalsFile], stdin: "", in: dir)
        #expect(result.stderr.contains("signals line 4: invalid signal: missing \"data.target.component\""), "\(result.stderr)")
        let sent = server.requests.flatMap { parseObject($0.body)?["batch"]?.arrayValue ?? [] }.map { $0["data"]?.objectValue ?? [:] }
        #expect(sent.count == 4, "\(sent)")
        #expect(sent.first == ["currentScreen": "Cart", "previousScreen": "Home"])
        #expect(sent.dropFirst().first?["target"]?["title"] == "Add to cart")
        #expect(sent.dropFirst(2).first?["ok"] == true && sent.dropFirst(2).first?["body"] == ["id": 1])
        #expect(sent.last == ["action": "response", "url": "https://x/products/2", "statusCode": 404, "status": 404, "ok": false])
    }

    @Test func anUnreadableSignalsFileIsAUsageError() throws {
        let dir = makeTempDirectory("cli-signals-missing")
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson")
        let result = try HostBinary.run(["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s",
                                         "--signals", dir + "/nope.ndjson"], stdin: "", in: dir)
        #expect(result.status == 2)
        #expect(result.stderr.contains("cannot read signals \(dir)/nope.ndjson"))
    }
}
