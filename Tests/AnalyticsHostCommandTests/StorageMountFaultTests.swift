import AnalyticsTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// A small tmpfs mounted for one test (root only): a read-only one, or a tiny one that fills.
/// Unmounted by `unmount()`, which each test defers.
struct TmpfsMount {
    let path: String

    /// Whether this process may mount tmpfs (root on Linux, not in a restricted container).
    static let permitted: Bool = {
        let probe = makeTempDirectory("tmpfs-probe")
        guard let mount = try? TmpfsMount(at: probe, options: "size=16k") else { return false }
        mount.unmount()
        return true
    }()

    struct Failed: Error, CustomStringConvertible { let description: String }

    init(at path: String, options: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let status = Self.run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path])
        guard status == 0 else { throw Failed(description: "mount -t tmpfs -o \(options) \(path) exited \(status)") }
        self.path = path
    }

    func unmount() {
        _ = Self.run("/bin/umount", [path])
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Storage that cannot be written (issue "Correct at the edges" §2): a read-only mount and a full
/// disk, on real tmpfs mounts, through the built `analytics-host run`. Skipped where mounting is
/// not permitted (not root).
@Suite(.serialized, .enabled(if: TmpfsMount.permitted, "mounting tmpfs needs root"))
struct StorageMountFaultTests {
    /// A read-only mount: exit 2 at start-up, naming the queue path and EROFS, no input read and
    /// nothing counted accepted.
    @Test func aReadOnlyMountExitsTwoBeforeReadingInput() throws {
        let dir = makeTempDirectory("mount-ro")
        let mount = try TmpfsMount(at: dir + "/ro", options: "ro,size=64k")
        defer { mount.unmount() }
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let result = try RunDrainTests.run([], settings: try RunDrainTests.settings(in: dir, port: server.port),
                                           storage: mount.path, stdin: RunDrainTests.lines(0..<10), in: dir)
        #expect(result.status == 2, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains(mount.path + "/queue"), "names the path: \(result.stderr)")
        #expect(result.stderr.contains("Read-only file system"), "names the reason: \(result.stderr)")
        #expect(result.stderr.contains("no input was read"), "\(result.stderr)")
        #expect(!result.stdout.contains("accepted"), "no summary, nothing accepted: \(result.stdout)")
        #expect(server.requests.isEmpty)
    }

    /// A 96 KiB disk that fills while events are written for Segment.io (server down, no drain
    /// time): the events that could not be stored are reported once per cause (the queue path and
    /// "No space left on device") with their count, and counted failed, not delivered; the stored
    /// ones are still queued; the run ends (no hang waiting for room that uploads cannot free)
    /// with exit 5.
    @Test func aFullDiskCountsEveryUnstoredEventAsFailedAndExitsFive() throws {
        let dir = makeTempDirectory("mount-full")
        let mount = try TmpfsMount(at: dir + "/full", options: "size=96k")
        defer { mount.unmount() }
        let total = 2_000  // about 200 KB of records: twice what fits
        // Input from a file: the child's ~1,800 error lines must not block on a pipe while the
        // test is still writing its standard input.
        try RunDrainTests.lines(0..<total).write(toFile: dir + "/events.ndjson", atomically: true, encoding: .utf8)
        let result = try RunDrainTests.run(["--drain-timeout", "0", "--input", dir + "/events.ndjson"],
                                           settings: try RunDrainTests.settings(in: dir, port: try refusedPort()),
                                           storage: mount.path, in: dir)
        #expect(result.status == 5, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains(mount.path + "/queue/"), "names the queue file: \(result.stderr.prefix(2000))")
        #expect(result.stderr.contains("No space left on device"), "\(result.stderr.prefix(2000))")
        // The summary's row: offered, delivered, dropped, skipped, failed, queued, abandoned.
        let row = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("Segment.io ") }, "\(result.stdout)")
        let counts = row.split(separator: " ").dropFirst().compactMap { Int($0) }
        try #require(counts.count == 7, "\(row)")
        let (offered, delivered, failed, queued) = (counts[0], counts[1], counts[4], counts[5])
        #expect(offered == total)
        #expect(delivered == 0, "nothing reached the server: \(row)")
        #expect(result.stdout.contains("\(queued) still queued"), "\(result.stdout)")
        #expect(failed > 0 && queued > 0, "\(result.stdout)")
        #expect(failed + queued == total, "every event is queued or counted failed: \(result.stdout)")
        // One line per cause, then its count: not one line per event.
        let notQueued = result.stderr.split(separator: "\n").filter { $0.contains(" not queued: ") && $0.contains("No space left on device") }
        let counted = notQueued.filter { $0.hasSuffix(" events in all") }
        #expect(notQueued.count - counted.count == counted.count, "each cause once, then its count: \(notQueued.prefix(6))")
        #expect(counted.count >= 1 && counted.count <= 3, "\(notQueued.prefix(6))")
        let reported = counted.compactMap { line in line.split(separator: " ").dropLast(3).last.flatMap { Int($0) } }
        #expect(reported.reduce(0, +) == failed, "the counts add up to the failed events: \(counted)")
        let reopened = try DurableQueue(directory: mount.path + "/queue", configuration: .init(secret: StorageSecret.open(directory: mount.path)))
        #expect(reopened.pendingEvents == queued, "queued is what is on disk")
        try reopened.close()
    }
}
