import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `run --signals`: a line with a timestamp that is not a date is refused by its line number, and
/// raw control bytes in a parser's message are printed escaped (as library text is), never raw.
@Suite struct SignalFeedLineTests {
    @Test func aBadTimestampIsRefusedAndANulIsPrintedEscaped() throws {
        let dir = makeTempDirectory("signal-lines")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        try #"{"integrations":{}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let signals = #"{"type":"navigation","data":{"action":"entering","screen":"X"},"timestamp":"not-a-date"}"# + "\n"
            + "{\"x\":\u{0}}\n"
            + #"{"type":"navigation","data":{"action":"entering","screen":"Y"},"timestamp":"2026-11-22T10:00:00.000Z"}"# + "\n"
        try signals.write(toFile: dir + "/signals.ndjson", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins", "--storage", dir + "/s",
                                         "--signals", dir + "/signals.ndjson", "--quiet"],
                                        stdin: "{\"type\":\"track\",\"event\":\"E\",\"userId\":\"u\"}\n{\"a\":\u{0}}\n", in: dir)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains(#"signals line 1: invalid signal: "timestamp" must be an ISO-8601 date-time such as 2026-11-22T10:00:00.000Z, not "not-a-date""#),
                "\(result.stderr)")
        #expect(result.stderr.contains(#"signals line 2: invalid JSON at column 6: unexpected character '\x00'"#), "\(result.stderr)")
        #expect(result.stderr.contains(#"input line 2: invalid JSON at column 6: unexpected character '\x00'"#), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{0}"), "no raw NUL reaches the terminal")
        #expect(result.stdout.contains("1 from the signals file, 2 rejected"), "\(result.stdout)")
    }

    /// analytics-next's web signals (a click on a DOM element, a URL change) are taken, not refused.
    @Test func webShapedSignalsAreAccepted() throws {
        let dir = makeTempDirectory("signal-web")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        try #"{"integrations":{}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let signals = #"{"type":"interaction","data":{"eventType":"click","target":{"tagName":"BUTTON","innerText":"Buy"}}}"# + "\n"
            + #"{"type":"navigation","data":{"action":"urlChange","url":"https://shop.example/cart","path":"/cart","hash":"","prevUrl":"https://shop.example/"}}"# + "\n"
            + #"{"type":"interaction","data":{"eventType":"submit","submitter":{"tagName":"FORM"}}}"# + "\n"
        try signals.write(toFile: dir + "/signals.ndjson", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins", "--storage", dir + "/s",
                                         "--signals", dir + "/signals.ndjson", "--quiet"],
                                        stdin: "{\"type\":\"track\",\"event\":\"E\",\"userId\":\"u\"}\n", in: dir)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(!result.stderr.contains("invalid signal"), "\(result.stderr)")
        #expect(result.stdout.contains("3 from the signals file"), "\(result.stdout)")
    }
}
