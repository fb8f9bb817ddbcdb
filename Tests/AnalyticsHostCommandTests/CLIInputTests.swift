import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// Bad input to `analytics-host run`: each bad line is reported by number, the rest is processed;
/// input that is not a stream of lines at all is a usage error.
@Suite(.serialized) struct CLIInputTests {
    func setUp(_ name: String) throws -> (dir: String, arguments: [String]) {
        let dir = makeTempDirectory(name)
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        return (dir, ["run", "--device", "--settings", settings, "--plugins", plugins, "--storage", dir + "/s", "--quiet"])
    }

    func delivered(_ dir: String) -> [String] {
        let text = (try? String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { (try? JSON(parsing: String($0)))?["event"]?.stringValue }
    }

    @Test func aLineThatIsNotUTF8IsRejectedWithItsNumber() throws {
        let (dir, arguments) = try setUp("cli-utf8")
        var input = Data(#"{"type":"track","event":"One"}"# .utf8) + Data("\n".utf8)
        input += Data(#"{"type":"track","event":"Bad","properties":{"name":"caf"#.utf8) + Data([0xE9]) + Data(#""}}"#.utf8) + Data("\n".utf8)
        input += Data(#"{"type":"track","event":"Bad2","properties":{"s":"\#u{00e9}"#.utf8) + Data([0xC3, 0x28]) + Data(#""}}"#.utf8) + Data("\n".utf8)
        input += Data(#"{"type":"track","event":"Two"}"#.utf8) + Data("\n".utf8)
        try input.write(to: URL(fileURLWithPath: dir + "/in.ndjson"))
        let result = try HostBinary.run(arguments + ["--input", dir + "/in.ndjson"], in: dir)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("input line 2: invalid JSON at column 56: not valid UTF-8 (byte 0xe9)"), "\(result.stderr)")
        #expect(result.stderr.contains("input line 3: invalid JSON at column 52: not valid UTF-8 (byte 0xc3)"), "\(result.stderr)")
        #expect(result.stdout.contains("2 events accepted, 2 rejected"))
        #expect(delivered(dir) == ["One", "Two"])
        #expect(!(try String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)).contains("\u{FFFD}"))
    }

    /// A 50 MB line is refused as over the event size limit without being held in memory (the
    /// process's peak RSS stays far below the line's size) and the next line is processed.
    @Test func aHugeLineIsRefusedWithoutHoldingItAndTheNextLineIsProcessed() throws {
        let (dir, arguments) = try setUp("cli-huge")
        let path = dir + "/in.ndjson"
        let size = 50 << 20
        var input = [UInt8](#"{"type":"track","event":"Huge","properties":{"x":""#.utf8)
        input += [UInt8](repeating: UInt8(ascii: "x"), count: size)
        input += [UInt8](#""}}"#.utf8) + [0x0A]
        input += [UInt8](#"{"type":"track","event":"After"}"#.utf8) + [0x0A]
        input += [UInt8](repeating: UInt8(ascii: "y"), count: 40_000) + [0x0A]  // over the limit, newline in the same block
        input += [UInt8](#"{"type":"track","event":"Last"}"#.utf8)  // no final newline
        try Data(input).write(to: URL(fileURLWithPath: path))

        let run = try SpawnedProcess(try HostBinary.path(), arguments + ["--input", path])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("input line 1: \(size + 53) bytes, over the 32768-byte event size limit; skipped"), "\(run.stderr)")
        #expect(run.stderr.contains("input line 3: 40000 bytes, over the 32768-byte event size limit; skipped"), "\(run.stderr)")
        #expect(run.stdout.contains("2 events accepted, 2 rejected"))
        #expect(delivered(dir) == ["After", "Last"])
        #expect(run.peakRSSBytes < size, "peak RSS \(run.peakRSSBytes) bytes: the line was not held")
    }

    @Test func lineBoundariesAcrossReadBlocksAreExact() throws {
        let (dir, arguments) = try setUp("cli-blocks")
        // Lines of every length around the 64 KiB read block and the limit, CRLF and LF mixed.
        var input = ""
        var expected: [String] = []
        var n = 0
        while input.utf8.count < 400_000 {
            let pad = String(repeating: "p", count: (n * 7919) % 30_000)
            input += #"{"type":"track","event":"E\#(n)","properties":{"pad":"\#(pad)"}}"# + (n % 3 == 0 ? "\r\n" : "\n")
            expected.append("E\(n)")
            n += 1
        }
        try input.write(toFile: dir + "/in.ndjson", atomically: true, encoding: .utf8)
        let result = try HostBinary.run(arguments + ["--input", dir + "/in.ndjson"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(delivered(dir) == expected)
    }

    @Test func aDirectoryOrAMissingFileIsAUsageError() throws {
        let (dir, arguments) = try setUp("cli-input-usage")
        let directory = try HostBinary.run(arguments + ["--input", dir], in: dir)
        #expect(directory.status == 2, "\(directory.stderr)")
        #expect(directory.stderr.contains("cannot read input \(dir): it is a directory"))
        let missing = try HostBinary.run(arguments + ["--input", dir + "/nope.ndjson"], in: dir)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read input \(dir)/nope.ndjson: No such file or directory"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/out.ndjson"), "nothing ran")
    }

    @Test func standardInputAndAFIFOWork() throws {
        let (dir, arguments) = try setUp("cli-fifo")
        let dash = try HostBinary.run(arguments + ["--input", "-"], stdin: #"{"type":"track","event":"FromStdin"}"#, in: dir)
        #expect(dash.status == 0, "\(dash.stderr)")

        let fifo = dir + "/events.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HostBinary.path())
        process.arguments = arguments + ["--input", fifo]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let writer = open(fifo, O_WRONLY)  // returns once the host has opened it for reading
        #expect(writer >= 0)
        for i in 0..<3 {
            let line = #"{"type":"track","event":"FromFIFO\#(i)"}"# + "\n"
            _ = line.withCString { write(writer, $0, strlen($0)) }
        }
        close(writer)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(delivered(dir) == ["FromStdin", "FromFIFO0", "FromFIFO1", "FromFIFO2"])
    }
}

/// A child process run to completion with its output captured and its own peak memory, measured
/// by the `peak_rss` fixture (a real fork, so the figure is not the test runner's memory, which a
/// vfork-based spawn would record as the child's).
struct SpawnedProcess {
    let status: Int32
    let stdout: String
    let stderr: String
    let peakRSSBytes: Int

    init(_ path: String, _ arguments: [String]) throws {
        let dir = makeTempDirectory("spawn")
        let probe = try FixtureBuilder.executable("peak_rss", in: dir)
        let outPath = dir + "/stdout", errPath = dir + "/stderr"
        let report = try FixtureBuilder.capture(probe, [outPath, errPath, path] + arguments)
        let fields = report.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard report.status == 0, fields.count == 2 else {
            throw BuiltExecutable.Missing(description: "peak_rss failed: \(report.stdout) \(report.stderr)")
        }
        status = Int32(fields[0])
        peakRSSBytes = fields[1] * 1024
        stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    }
}
