import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `analytics-host plugins` shows the second clients' queues (AH_EXT_CLIENTS) a run left on
/// disk: per library that opened them and for the storage directory, with the caps, in text and
/// in --json. The queue is left for real: a library sends every event on through a second client
/// (Tests/Fixtures/second_client.c) and the upload server refuses them.
@Suite(.serialized) struct PluginsSecondClientsTests {
    @Test(arguments: [false, true])
    func aSecondClientsQueueLeftOnDiskIsShownWithItsLibraryAndTheCaps(isolated: Bool) throws {
        let dir = makeTempDirectory("plugins-second-clients")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("second_client", in: plugins)
        // Every upload refused with a status worth retrying: the events stay queued.
        let server = try LoopbackHTTPServer(options: .init(respond: { _ in .status(503, body: "down") }))
        defer { server.stop() }
        let settings = dir + "/settings.json"
        let mode = isolated ? #","isolation":"process""# : ""
        try #"{"integrations":{"Segment.io":{"apiKey":"host-key","apiHost":"http://127.0.0.1:\#(server.port)/v1"},"SecondClient":{"secondKey":"second-key"\#(mode)}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let storage = dir + "/storage"
        let input = (1...3).map { #"{"type":"track","event":"E\#($0)","userId":"u","messageId":"m-\#($0)"}"# }.joined(separator: "\n") + "\n"
        let run = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run", "--settings", settings,
                                                              "--plugins", plugins, "--storage", storage, "--drain-timeout", "1", "--quiet"],
                                             stdin: Data(input.utf8))
        #expect(run.status == 4, "still queued: \(run.stdout)\n\(run.stderr)")
        let name = SecondClients.directoryName(for: "second-key")
        let queues = SecondClientQueues.onDisk(in: storage)
        try #require(queues.map(\.name) == [name], "\(queues)\n\(run.stderr)")
        let queue = queues[0]
        #expect(queue.libraries == ["SecondClient"] && queue.events == 3 && queue.bytes > 0, "\(queue)")
        #expect(server.requests.contains { $0.header("Authorization") == "Basic " + Data("second-key:".utf8).base64EncodedString() },
                "the second client tried to upload under its own key")

        let text = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "plugins",
                                                               "--plugins", plugins, "--storage", storage])
        #expect(text.status == 0, "\(text.stderr)")
        let out = text.stdout
        let library = try #require(out.components(separatedBy: "\n\n").first { $0.hasPrefix("SecondClient ") }, "\(out)")
        #expect(library.contains("  second clients  1 queue, \(queue.bytes) bytes, 3 events on disk"), "\(library)")
        #expect(library.contains("    \(name)  \(queue.bytes) bytes, 3 events when its host stopped"), "\(library)")
        let file = try #require(out.components(separatedBy: "\n\n").first { $0.hasPrefix("File ") }, "\(out)")
        #expect(!file.contains("second clients"), "a library that opened none shows none")
        #expect(out.contains("second clients in \(storage)/clients: 1 queue, \(queue.bytes) bytes, 3 events on disk "
                             + "(caps: 4194304 bytes a queue, 67108864 all together, \(67_108_864 - queue.bytes) left; 16 clients per host)"), "\(out)")
        #expect(out.contains("  \(name)  \(queue.bytes) bytes, 3 events when its host stopped; opened by SecondClient"), "\(out)")

        let json = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "plugins",
                                                               "--plugins", plugins, "--storage", storage, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let document = try JSON(parsing: Array(json.stdout.utf8))
        let entry = try #require(document["libraries"]?.arrayValue?.first { $0["key"]?.stringValue == "SecondClient" })
        let own = try #require(entry["secondClients"])
        #expect(own["queues"]?.intValue == 1 && own["bytes"]?.intValue == queue.bytes && own["events"]?.intValue == 3, "\(own)")
        #expect(own["onDisk"]?[0]?["directory"]?.stringValue == queue.directory)
        #expect(own["onDisk"]?[0]?["libraries"] == ["SecondClient"])
        let all = try #require(document["secondClients"])
        #expect(all["storageDirectory"]?.stringValue == storage && all["queues"]?.intValue == 1 && all["bytes"]?.intValue == queue.bytes)
        #expect(all["queueCapBytes"]?.intValue == 4 << 20 && all["totalCapBytes"]?.intValue == 64 << 20 && all["maxClients"]?.intValue == 16)
        let fileEntry = try #require(document["libraries"]?.arrayValue?.first { $0["key"]?.stringValue == "File" })
        #expect(fileEntry["secondClients"]?["queues"]?.intValue == 0)
    }
}
