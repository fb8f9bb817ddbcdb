import AnalyticsTestSupport
import Foundation
import Glibc
import LoopbackHTTP
import Testing
@testable import AnalyticsCore

/// `analytics-host validate` (LibraryValidator, each check in a runner process) against libraries
/// built from Tests/Fixtures/broken.c with one deliberate fault each, and a well-behaved one.
@Suite struct ValidatorTests {
    func findings(_ defines: [String], timeout: Double = 20, user: RunnerUser = .nobody,
                  directoryMode: mode_t = 0o755) throws -> [String: LibraryValidator.Finding] {
        let directory = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(directory) }
        let file = try FixtureBuilder.library("broken", in: directory, as: "libbroken.so", defines: defines)
        chmod(directory, directoryMode)
        return try findings(file: file, settings: [:], timeout: timeout, user: user)
    }

    func findings(file: String, settings: JSONObject, timeout: Double = 20, user: RunnerUser = .nobody) throws -> [String: LibraryValidator.Finding] {
        let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
        let all = LibraryValidator.validate(file: file, settings: settings, runner: runner, timeout: timeout, user: user)
        #expect(all.map(\.check) == LibraryValidator.checks.map(\.name))
        return Dictionary(uniqueKeysWithValues: all.map { ($0.check, $0) })
    }

    @Test func aWellBehavedLibraryPassesEveryCheck() throws {
        let f = try findings([])
        #expect(f.values.allSatisfy { $0.verdict == .pass }, "\(f.values.map { "\($0.check): \($0.detail)" })")
    }

    @Test func aCrashInCreateIsAFindingNotTheEnd() throws {
        let f = try findings(["CRASH_IN_CREATE"])
        #expect(f["load"]?.verdict == .pass)
        #expect(f["create-empty"]?.verdict == .fail)
        #expect(f["create-empty"]?.detail.hasPrefix("the library crashed (signal 11") == true)
    }

    @Test func aHookThatHangsFailsWithinTheTimeout() throws {
        let f = try findings(["HANG_IN_TRACK"], timeout: 3)
        #expect(f["hooks-fuzz"]?.verdict == .fail)
        #expect(f["hooks-fuzz"]?.detail.contains("did not finish within 3.0 s") == true)
    }

    @Test func aThreadLeftAfterDestroyIsFound() throws {
        let f = try findings(["THREAD_LEFT"])
        #expect(f["leftovers"]?.verdict == .fail)
        #expect(f["leftovers"]?.detail.hasPrefix("1 thread still running after destroy (stop every thread in destroy): tid ") == true,
                "\(f["leftovers"]?.detail ?? "no finding")")
        #expect(f["hooks-fuzz"]?.verdict == .pass)
    }

    /// The threads that answer a library's `AH_EXT_HTTP_REQUESTS` calls are the host's: Amplitude
    /// aimed at a real server that answers 200 uploads through them and stops its own threads in
    /// destroy, so nothing is left; the fixture's own thread is still found (above).
    @Test func hostHTTPThreadsAreNotTheLibrarysLeftovers() throws {
        let server = try LoopbackHTTPServer()  // answers 200
        defer { server.stop() }
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let f = try findings(file: try AmplitudeBuild.library(in: dir), settings: ["apiKey": "validate", "apiHost": .string(server.baseURL)])
        #expect(f["leftovers"]?.verdict == .pass, "\(f["leftovers"]?.detail ?? "no finding")")
        #expect(f["completions"]?.verdict == .pass, "\(f["completions"]?.detail ?? "no finding")")
        #expect(f["hooks-fuzz"]?.verdict == .pass, "\(f["hooks-fuzz"]?.detail ?? "no finding")")
    }

    /// A root host's checks run as the user `run`'s runners are (65534 unless told otherwise), so a
    /// library that passes here loads there.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func asRootTheChecksRunAsTheRunnerUser() throws {
        let f = try findings(["REFUSE_WITH_UID"])
        #expect(f["create-empty"]?.detail.hasSuffix("running as uid 65534 gid 65534") == true, "\(f["create-empty"]?.detail ?? "no finding")")
        let other = try findings(["REFUSE_WITH_UID"], user: RunnerUser(uid: 4242, gid: 4343))
        #expect(other["create-empty"]?.detail.hasSuffix("running as uid 4242 gid 4343") == true, "\(other["create-empty"]?.detail ?? "no finding")")
    }

    /// The command takes `--runner-user=UID[:GID]` as `run` does, and refuses root as `run` does.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func theCommandTakesTheRunnerUserOfRun() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let file = try FixtureBuilder.library("broken", in: dir, as: "libbroken.so", defines: ["REFUSE_WITH_UID"])
        let given = try HostBinary.run(["validate", file, "--json", "--runner-user=4242:4343"], in: dir)
        #expect(given.status == 0, "\(given.stdout)\(given.stderr)")
        let lines = given.stdout.split(separator: "\n").compactMap { (try? JSON(parsing: String($0)))?.objectValue }
        let created = try #require(lines.first { $0["check"]?.stringValue == "create-empty" })
        #expect(created["detail"]?.stringValue?.hasSuffix("running as uid 4242 gid 4343") == true, "\(created)")
        let root = try HostBinary.run(["validate", file, "--runner-user=0"], in: dir)
        #expect(root.status != 0 && root.stderr.contains("--runner-user= needs a uid other than 0"), "\(root.stderr)")
    }

    /// As `run` does, the validator hands each check's runner the library open: one in a
    /// directory only root may pass passes every check; one whose file only root may read fails
    /// every check, naming the file and the user, as `run` refuses to load it.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func asRootALibraryInADirectoryOnlyRootMayPassPassesButOneOnlyRootMayReadFails() throws {
        let passed = try findings([], directoryMode: 0o700)
        #expect(passed.values.allSatisfy { $0.verdict == .pass }, "\(passed.values.map { "\($0.check): \($0.detail)" })")
        let directory = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(directory) }
        let file = try FixtureBuilder.library("broken", in: directory, as: "libbroken.so")
        chmod(file, 0o700)
        let f = try findings(file: file, settings: [:])
        #expect(f.values.allSatisfy { $0.verdict == .fail })
        #expect(f["load"]?.detail.contains("libbroken.so (mode 700") == true && f["load"]?.detail.contains("uid 65534 gid 65534") == true
                && f["load"]?.detail.contains("cannot read it") == true, "\(f["load"]?.detail ?? "no finding")")
    }

    @Test func aDurableQueueThatCannotHoldAnEventIsFound() throws {
        let f = try findings(["DURABLE_TINY_CAP"])
        #expect(f["durable"]?.verdict == .fail)
        #expect(f["durable"]?.detail.hasPrefix("ah_durable.max_disk_bytes 1024: invalid queue configuration: maxDiskBytes 1024 is smaller than") == true, "\(f["durable"]?.detail ?? "")")
        #expect(f["load"]?.verdict == .pass)
    }

    @Test func aTokenCompletedTwiceIsFound() throws {
        let f = try findings(["COMPLETE_TWICE"])
        #expect(f["completions"]?.verdict == .fail)
        #expect(f["completions"]?.detail.contains("which is not pending (completed twice") == true)
        #expect(f["create-empty"]?.verdict == .pass)
    }
}
