import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `run`'s progress line, seen on a real terminal: the child's standard error is a pseudo-terminal
/// this test reads.
@Suite(.serialized) struct RunProgressTests {
    /// Runs `analytics-host` with standard error on a new pty; returns what the terminal showed and
    /// the exit status.
    /// With `typed`, standard input is the terminal too and `typed` is what the user types.
    static func runOnTerminal(_ arguments: [String], in directory: String, typed: String? = nil) throws -> (shown: String, status: Int32) {
        // posix_openpt/unlockpt/ptsname by hand (Glibc's module does not export them): the
        // multiplexer, TIOCSPTLCK 0 to unlock, TIOCGPTN for the number of /dev/pts/N.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0, number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw FixtureBuilder.BuildError(description: "no pseudo-terminal: errno \(errno)")
        }
        defer { close(master) }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw FixtureBuilder.BuildError(description: "cannot open /dev/pts/\(number): errno \(errno)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try HostBinary.path())
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = typed == nil ? FileHandle.nullDevice : FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        try process.run()
        close(slave)
        if let typed {
            // The line discipline holds it until the child reads; ^D (EOF) ends the input.
            let bytes = Array(typed.utf8) + [4]
            _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        }
        // Until the child's end closes the terminal (EIO on Linux once no one holds the slave side).
        var shown: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if n > 0 { shown += buffer[0..<n]; continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        process.waitUntilExit()
        return (String(decoding: shown, as: UTF8.self), process.terminationStatus)
    }

    @Test func aFileInputShowsTotalPercentAndTimeOnATerminal() throws {
        let dir = makeTempDirectory("progress")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        let settings = try HostBinary.settings(in: dir, output: dir + "/out.ndjson", console: false)
        let lines = (0..<5_000).map { #"{"type":"track","event":"Progress","userId":"u","properties":{"i":\#($0)}}"# }
        try (lines.joined(separator: "\n") + "\n").write(toFile: dir + "/events.ndjson", atomically: true, encoding: .utf8)
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/events.ndjson")[.size] as! Int
        let megabytes = String(format: "%.1f MB", Double(size) / 1_000_000)
        let base = ["run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/storage", "--input", dir + "/events.ndjson"]

        let run = try Self.runOnTerminal(base, in: dir)
        #expect(run.status == 0, "\(run.shown)")
        // The last line: every event, the whole file of its size, and the time it took.
        #expect(run.shown.contains(/5,000 events, [\d,]+ events\/s; \d+\.\d MB of \d+\.\d MB \(100%\), done in \d+:\d\d/), "\(run.shown)")
        #expect(run.shown.contains("\(megabytes) of \(megabytes) (100%)"), "\(run.shown)")

        let quiet = try Self.runOnTerminal(base + ["--quiet"], in: dir)
        #expect(quiet.status == 0)
        #expect(!quiet.shown.contains("events/s"), "--quiet: no progress line: \(quiet.shown)")
        // Not a terminal: no progress line either.
        let piped = try HostBinary.run(base, in: dir)
        #expect(piped.status == 0 && !piped.stderr.contains("events/s"), "\(piped.stderr)")
    }
}
