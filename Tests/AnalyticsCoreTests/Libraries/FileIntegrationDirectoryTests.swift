import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The File example creates the directories its "path" needs, so the example settings run from a
/// fresh checkout (where build/demo does not exist yet); a directory it cannot create is named.
@Suite struct FileIntegrationDirectoryTests {
    @Test func missingDirectoriesAreCreated() throws {
        let dir = makeTempDirectory("file-mkdir")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let output = dir + "/not/yet/there/out.ndjson"
        let result = try HostBinary.run(["run", "--settings", try HostBinary.settings(in: dir, output: output, console: false),
                                         "--plugins", plugins, "--storage", dir + "/s", "--quiet"],
                                        stdin: #"{"type":"track","event":"E","userId":"u","messageId":"m-1"}"# + "\n", in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let written = try String(contentsOfFile: output, encoding: .utf8)
        #expect(written.contains(#""messageId":"m-1""#))
    }

    @Test func aDirectoryThatCannotBeCreatedIsNamed() throws {
        let dir = makeTempDirectory("file-mkdir-fails")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try "a file".write(toFile: dir + "/blocker", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(["run", "--settings", try HostBinary.settings(in: dir, output: dir + "/blocker/sub/out.ndjson", console: false),
                                         "--plugins", plugins, "--storage", dir + "/s", "--quiet"],
                                        stdin: #"{"type":"track","event":"E","userId":"u"}"# + "\n", in: dir)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("cannot create directory \(dir)/blocker/sub"), "\(result.stderr)")
    }
}
