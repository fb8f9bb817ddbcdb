import AnalyticsTestSupport
import AnalyticsCore
import Foundation
import Testing

/// The summary's numbers say what they mean: an event a library failed is failed, not also
/// delivered; every column is defined in `run --help`; the columns add up to "offered".
@Suite struct SummaryWordingTests {
    @Test func aFailedEventIsNotAlsoDeliveredAndTheColumnsAddUp() throws {
        let dir = makeTempDirectory("summary-wording")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        _ = try FixtureBuilder.library("flaky", in: plugins)
        try #"{"integrations":{"Flaky":{"failures":0},"File":{"path":"\#(dir)/out.ndjson"}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let input = [#"{"type":"group","groupId":"g","userId":"u"}"#, #"{"type":"track","event":"A","userId":"u"}"#,
                     #"{"type":"track","event":"B","userId":"u"}"#].joined(separator: "\n") + "\n"
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", plugins, "--storage", dir + "/storage", "--quiet"],
                                        stdin: input, in: dir)
        #expect(result.status == 5, "the group call failed for good: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        let header = try #require(lines.first { $0.hasPrefix("destination ") })
        let columns = header.split(separator: " ").map(String.init)
        #expect(columns == ["destination", "offered", "delivered", "dropped", "skipped", "failed", "queued", "abandoned"])
        let rows = Dictionary(uniqueKeysWithValues: lines.compactMap { line -> (String, [Int])? in
            let cells = line.split(separator: " ")
            guard cells.count == columns.count, let offered = Int(cells[1]) else { return nil }
            return (String(cells[0]), [offered] + cells[2...].compactMap { Int($0) })
        })
        #expect(rows["Flaky"] == [3, 2, 0, 0, 1, 0, 0], "\(result.stdout)")
        #expect(rows["File"] == [3, 3, 0, 0, 0, 0, 0], "\(result.stdout)")
        for (key, row) in rows { #expect(row[0] == row[1...].reduce(0, +), "\(key): offered is the sum of the other columns") }
        // `run --help` defines every column (not the summary itself, which a user reads every run).
        let legend = try HostBinary.run(["run", "--help"], in: dir).stdout.split(separator: "\n").joined(separator: " ")
        for column in columns.dropFirst() + ["retried", "restarts"] {
            #expect(legend.contains("\(column): "), "run --help does not define \(column)")
            #expect(!result.stdout.contains("\(column): "), "the summary repeats the legend")
        }
    }
}
