import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// A parser message quotes the byte it stopped at; a control byte (a NUL) from a settings file
/// reaches the terminal escaped (`'\x00'`), as library text does, wherever the message is printed.
@Suite struct ParserMessageEscapingTests {
    @Test func aNulInSettingsIsPrintedEscaped() throws {
        let dir = makeTempDirectory("nul-settings")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        try Data(#"{"integrations":["#.utf8 + [0] + "]}".utf8).write(to: URL(fileURLWithPath: dir + "/settings.json"))
        let expected = #"invalid JSON at line 1, column 18: unexpected character '\x00'"#

        let run = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins",
                                      "--storage", dir + "/s", "--input", "/dev/null"], in: dir)
        #expect(run.status == 2)
        #expect(run.stderr.contains(expected), "\(run.stderr)")
        #expect(!run.stderr.contains("\u{0}"))

        let check = try HostBinary.run(["check-settings", dir + "/settings.json"], in: dir)
        #expect(check.stdout.contains(expected), "\(check.stdout)")
        #expect(!check.stdout.contains("\u{0}"))

        let option = try HostBinary.run(["run", "--bogus\u{1}"], in: dir)
        #expect(option.status == 2 && option.stderr.contains(#"'--bogus\x01'"#), "\(option.stderr)")
    }
}
