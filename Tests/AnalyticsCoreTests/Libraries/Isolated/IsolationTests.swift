import AnalyticsTestSupport
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// Process isolation with real libraries built from C, real `analytics-plugin-runner` processes
/// and real crashes: a library that segfaults, hangs, crashes on every start or allocates without
/// bound ends only its own process; the host completes and every other destination gets everything.
@Suite struct IsolationTests {
    typealias Setup = IsolatedBesideFile

    /// `Isolated` (tests/Fixtures/isolated.c) in process mode next to the File example in-process.
    func start(isolatedSettings: JSONObject = [:], configure: (inout Configuration) -> Void = { _ in }) throws -> Setup {
        let dir = makeTempDirectory("loader")
        // Its jail lets it write in the test's directory (its output, its marker).
        makeRunnerWritable(dir)
        var own: JSONObject = ["path": .string(dir + "/isolated.ndjson"), "isolation": ["mode": "process", "allow": [.string("files:" + dir)]],
                               "marker": .string(dir + "/marker")]
        own.merge(isolatedSettings)
        return try IsolatedBesideFile(fixture: "isolated", key: "Isolated", settings: own, output: dir + "/isolated.ndjson", in: dir, configure: configure)
    }

    @Test func aTrackHookThatSegfaultsOnEvent1000IsRestartedAndEveryEventIsDeliveredOrCountedFailed() throws {
        let s = try start()
        defer { FixtureBuilder.remove(s.dir) }
        #expect(s.analytics.isolatedLibraries.map(\.key) == ["Isolated"])
        #expect(s.analytics.pluginScan.libraries.map(\.key) == ["File"])
        for n in 1...3000 { s.analytics.track(n == 1000 ? "Crash" : "E", properties: ["n": .number(Double(n))]) }
        #expect(s.analytics.shutdown())

        let isolated = try #require(s.analytics.timeline.stats(forKey: "Isolated"))
        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((file.received, file.delivered, file.failed) == (3000, 3000, 0), "the other destination gets everything")
        #expect(readJSONLines(s.fileOutput).count == 3000)
        #expect((isolated.received, isolated.delivered, isolated.failed) == (3000, 3000, 1), "handed over, one of them failed")
        #expect(isolated.restarts == 3, "the event crashed it three times (maxAttempts), then it went on")
        let seen = readJSONLines(s.libraryOutput).compactMap { $0["properties"]?["n"]?.intValue }
        #expect(Set(seen) == Set(1...3000).subtracting([1000]), "every other event reached the library")
        #expect(seen.count == 2999, "what the library finished before it crashed is not sent again")
        #expect(seen == seen.sorted(), "in order")
        let crashReports = s.errors.messages.filter { $0.contains("was killed by signal 11 (SIGSEGV) while processing track \"Crash\" event") }
        #expect(crashReports.count == 3, "\(s.errors.messages)")
        #expect(crashReports.allSatisfy { $0.hasPrefix("plugin Isolated: library \(s.dir)/plugins/libisolated.so (process-isolated)") })
        #expect(crashReports.last?.contains("it ended the process 3 times and is counted failed") == true)
    }

    @Test func aHookThatHangsIsKilledAtTheDeadlineAndRestarted() throws {
        let s = try start { $0.hookTimeout = 0.5 }
        defer { FixtureBuilder.remove(s.dir) }
        s.analytics.track("Before")
        s.analytics.track("Hang")
        s.analytics.track("After")
        #expect(s.analytics.flush(), "the flush waits for the hung call to be killed and the events sent again")
        #expect(s.analytics.shutdown())
        let isolated = try #require(s.analytics.timeline.stats(forKey: "Isolated"))
        #expect((isolated.received, isolated.delivered, isolated.failed, isolated.restarts) == (3, 3, 0, 1))
        // "Before" finished before the hang (the progress page says so): it is not sent again.
        #expect(readJSONLines(s.libraryOutput).compactMap { $0["event"]?.stringValue } == ["Before", "Hang", "After"])
        #expect(s.errors.messages.contains { $0.contains("did not answer within 0.5 s and was killed while processing track \"Hang\" event") },
                "\(s.errors.messages)")
        #expect(readJSONLines(s.fileOutput).count == 3)
    }

    @Test func aRetryableFailureIsRetriedInPlaceBeforeTheEventsBehindIt() throws {
        let s = try start { $0.hookTimeout = 0.5 }
        defer { FixtureBuilder.remove(s.dir) }
        for name in ["One", "Flaky", "Two", "Three"] { s.analytics.track(name) }
        #expect(s.analytics.flush())
        #expect(s.analytics.shutdown())
        #expect(readJSONLines(s.libraryOutput).compactMap { $0["event"]?.stringValue } == ["One", "Flaky", "Two", "Three"],
                "as in-process: the retry holds the events behind it")
        let isolated = try #require(s.analytics.timeline.stats(forKey: "Isolated"))
        #expect((isolated.delivered, isolated.failed, isolated.restarts) == (4, 0, 0))
        #expect(s.errors.messages.isEmpty, "\(s.errors.messages)")
    }

    @Test func aLibraryThatCrashesOnEveryStartIsDisabledAfterNTriesAndReported() throws {
        let s = try start(isolatedSettings: ["crash_in_create": true]) {
            $0.isolation.maxCrashes = 3
            $0.isolation.restartDelay = 0.01
        }
        defer { FixtureBuilder.remove(s.dir) }
        for n in 1...50 { s.analytics.track("E", properties: ["n": .number(Double(n))]) }
        #expect(s.analytics.flush())
        #expect(s.analytics.shutdown())
        let isolated = try #require(s.analytics.timeline.stats(forKey: "Isolated"))
        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((isolated.received, isolated.delivered, isolated.failed) == (50, 50, 50), "handed over, every one failed")
        #expect(file.delivered == 50)
        let crashes = s.errors.messages.filter { $0.contains("was killed by signal 6 (SIGABRT) while creating the instance") }
        #expect(crashes.count == 3, "\(s.errors.messages)")
        #expect(crashes.last?.contains("3 crashes within 60.0 s: disabled, its events are counted failed from now on") == true)
    }

    /// The mode is chosen at start-up; a refresh asking for another one is reported, not ignored.
    @Test func aRefreshThatChangesTheModeSaysItTakesEffectAtTheNextStart() throws {
        let logs = Locked<[String]>([])
        let s = try start { $0.logHandler = { level, message in logs.withLock { $0.append("\(level.rawValue): \(message)") } } }
        defer { FixtureBuilder.remove(s.dir) }
        var settings = s.analytics.settings.json
        settings["integrations"]?["Isolated"]?["isolation"] = "in-process"
        settings["integrations"]?["File"]?["isolation"] = "process"
        s.analytics.update(settings: Settings(settings))
        s.analytics.update(settings: Settings(settings))  // said once per change, not per refresh
        s.analytics.track("After")
        #expect(s.analytics.shutdown())
        #expect(s.analytics.find(key: "Isolated") is ProcessDestination)
        let warnings = logs.withLock { $0 }.filter { $0.contains("isolation is chosen at start-up") }
        #expect(warnings.count == 2, "\(logs.withLock { $0 })")
        #expect(warnings.contains { $0.contains("Isolated runs in process mode; the settings now ask for in-process") })
        #expect(warnings.contains { $0.contains("File runs in-process; the settings now ask for process mode") })
        #expect(readJSONLines(s.libraryOutput).compactMap { $0["event"]?.stringValue } == ["After"])
    }

    /// "Allocate" (which allocates without bound) then "After" through the isolated library under
    /// the memory limit `configure` sets: its runner is stopped, restarted once, "Allocate" is
    /// counted failed and "After" delivered. Returns the report of the runner's end.
    func allocateWithoutBound(_ configure: (inout IsolationConfiguration) -> Void) throws -> String {
        let s = try start {
            $0.isolation.maxAttempts = 1
            configure(&$0.isolation)
        }
        defer { FixtureBuilder.remove(s.dir) }
        s.analytics.track("Allocate")
        s.analytics.track("After")
        #expect(s.analytics.shutdown())
        let isolated = try #require(s.analytics.timeline.stats(forKey: "Isolated"))
        #expect((isolated.received, isolated.delivered, isolated.failed, isolated.restarts) == (2, 2, 1, 1))
        #expect(readJSONLines(s.libraryOutput).compactMap { $0["event"]?.stringValue } == ["After"])
        return try #require(s.errors.messages.first { $0.contains("while processing track \"Allocate\" event") }, "\(s.errors.messages)")
    }

    /// Where the host may make a memory cgroup (CI: root on cgroup v1), the runner's limit is
    /// the memory it really uses: the kernel's OOM killer ends it, and the report says so.
    @Test(.disabled(if: ThreadSanitizer.isActive, "ThreadSanitizer's shadow memory counts against the cgroup"),
          .enabled(if: IsolatedCgroup.unavailableReason == nil, "no memory cgroup here: \(IsolatedCgroup.unavailableReason ?? "")"))
    func aLibraryThatAllocatesWithoutBoundIsStoppedByItsMemoryCgroup() throws {
        let report = try allocateWithoutBound { $0.memoryLimitBytes = 256 << 20 }
        let prefix = "was stopped by its memory limit (268435456 bytes, memory cgroup "
        let suffix = "): it was killed by signal 9 (SIGKILL)"
        let start = try #require(report.range(of: prefix), "\(report)"), end = try #require(report.range(of: suffix), "\(report)")
        // The library's cgroup is gone with it.
        let cgroup = String(report[start.upperBound..<end.lowerBound])
        #expect(cgroup.hasPrefix(IsolatedCgroup.parent.path ?? "?") && !FileManager.default.fileExists(atPath: cgroup), "\(cgroup)")
    }

    /// RLIMIT_AS (`memoryLimit = .addressSpace`, and where no cgroup can be made): malloc fails,
    /// and the library that does not check writes through NULL.
    @Test(.disabled(if: ThreadSanitizer.isActive, "RLIMIT_AS is not applied under ThreadSanitizer"))
    func aLibraryThatAllocatesWithoutBoundIsStoppedByItsAddressSpaceLimit() throws {
        let report = try allocateWithoutBound {
            $0.memoryLimitBytes = 512 << 20
            $0.memoryLimit = .addressSpace
        }
        #expect(report.contains("was killed by signal 11 (SIGSEGV) while processing track \"Allocate\" event"), "\(report)")
    }

    @Test(.disabled(if: ThreadSanitizer.isActive, "ThreadSanitizer turns an _exit inside dlopen into its own exit status 66"))
    func constructorsThatExitCrashOrPrintAffectOnlyTheirOwnLineOfPlugins() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        try FixtureBuilder.library("constructor", in: dir, as: "libexits.so", defines: ["EXIT_IN_CONSTRUCTOR", "KEY=\"Exits\""])
        try FixtureBuilder.library("constructor", in: dir, as: "libcrashes.so", defines: ["CRASH_IN_CONSTRUCTOR", "KEY=\"Crashes\""])
        try FixtureBuilder.library("constructor", in: dir, as: "libprints.so", defines: ["PRINT_IN_CONSTRUCTOR"])
        try FixtureBuilder.library("noop", in: dir)
        let host = try BuiltExecutable.path("analytics-host")
        for pass in 1...2 {  // the second listing comes from the scan cache
            let json = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", host, "plugins", "--plugins", dir, "--json"])
            #expect(json.status == 1, "pass \(pass): some were refused")
            let listing = try #require(try JSON(parsing: json.stdout).objectValue, "pass \(pass): --json stays valid: \(json.stdout)")
            let entries = listing["libraries"]?.arrayValue ?? []
            func entry(_ name: String) -> JSONObject? { entries.first { $0["file"]?.stringValue == dir + "/" + name }?.objectValue }
            #expect(entry("libnoop.so")?["status"] == "loaded")
            #expect(entry("libnoop.so")?["isolation"] == "in-process")
            #expect(entry("libprints.so")?["status"] == "loaded")
            #expect(entry("libprints.so")?["key"] == "Printer")
            #expect(entry("libexits.so")?["status"] == "refused")
            #expect(entry("libexits.so")?["reason"]?.stringValue?.contains("the process exited with status 7 before it answered") == true)
            #expect(entry("libcrashes.so")?["reason"]?.stringValue?.contains("was killed by signal 11 (SIGSEGV) before it answered") == true)
        }
        let text = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", host, "plugins", "--plugins", dir, "--isolate=Noop"])
        #expect(text.stdout.contains("plugins in \(dir): 2 loaded, 2 refused"))
        #expect(text.stdout.contains("isolation  process"))
        // How its memory limit holds on this machine.
        let mechanism = IsolatedCgroup.unavailableReason == nil ? "(memory cgroup)" : "(RLIMIT_AS: no memory cgroup, "
        #expect(text.stdout.contains("memory     2147483648 bytes \(mechanism)"), "\(text.stdout)")
    }
}

/// What a process-isolated library still gets (host services over the socket) and what its
/// process is denied (the host's descriptors, new privileges, unbounded address space).
@Suite struct IsolationServicesTests {
    @Test func hostServicesCrossTheProcessBoundary() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        try FixtureBuilder.library("send_back", in: plugins)
        try FixtureBuilder.plugin("Plugins/File/file.c", in: plugins, as: "libfile.so")
        let logs = Locked<[String]>([])
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": ["Echo": [:], "File": ["path": .string(dir + "/file.ndjson")]]])
        config.pluginsDirectory = plugins
        config.isolation = IsolationConfiguration(byKey: ["Echo": .process])
        config.isolation.scanCacheFile = ""
        config.logHandler = { _, message in logs.withLock { $0.append(message) } }
        let analytics = Analytics(configuration: config)
        #expect(analytics.isolatedLibraries.map(\.key) == ["Echo"])
        analytics.identify(userId: "u-1")
        analytics.track("Hi")
        #expect(analytics.flush())
        #expect(analytics.shutdown())
        let events = (try String(contentsOfFile: dir + "/file.ndjson", encoding: .utf8)).split(separator: "\n")
            .compactMap { try? JSON(parsing: String($0)) }
        let echo = try #require(events.first { $0["event"] == "Echo" }, "send_event from the child reached the pipeline")
        #expect(echo["userId"] == "u-1")
        #expect(echo["anonymousId"]?.stringValue == analytics.anonymousId)
        let anonymous = analytics.anonymousId
        #expect(logs.withLock { $0 }.contains("Echo: echoed user=u-1 (3) anon=\(anonymous) (\(anonymous.utf8.count)) status=0"),
                "\(logs.withLock { $0 })")
    }

    @Test(.disabled(if: ThreadSanitizer.isActive, "RLIMIT_AS is not applied under ThreadSanitizer"))
    func theRunnerHoldsOnlyItsOwnDescriptorsAndNoPrivileges() throws {
        let leaked = FixturePipe()  // not close-on-exec: a child that inherited descriptors would hold it
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        try FixtureBuilder.library("isolated", in: plugins)
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": ["Isolated": ["path": .string(dir + "/out.ndjson"),
                                                                         "isolation": ["mode": "process", "allow": [.string("files:" + dir)]]]]])
        makeRunnerWritable(dir)
        config.pluginsDirectory = plugins
        config.isolation.scanCacheFile = ""
        config.isolation.memoryLimitBytes = 1 << 30
        config.isolation.memoryLimit = .addressSpace  // RLIMIT_AS, read back below
        let analytics = Analytics(configuration: config)
        analytics.track("Probe")
        #expect(analytics.shutdown())
        let probe = try #require(try JSON(parsing: String(contentsOfFile: dir + "/out.ndjson", encoding: .utf8)).objectValue)
        #expect(probe["nnp"] == 1)
        #expect(probe["as"]?.intValue == 1 << 30)
        let fds = (probe["fds"]?.stringValue ?? "").split(separator: " ").filter { $0.contains("=") }
            .map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        let numbers = fds.compactMap { Int($0[0]) }.sorted()
        // 0 /dev/null, 1 and 2 the host's standard error, 3/4 the protocol socket, 5 the progress
        // page, then only what the library opened itself: nothing of the host's.
        #expect(!fds.contains { Int($0[0])! > 2 && $0[1].hasPrefix("pipe:") }, "\(fds); the host's pipe is fd \(leaked.readEnd)")
        #expect(fds.first { $0[0] == "0" }?.last == "/dev/null")
        #expect(fds.first { $0[0] == "3" }?.last?.hasPrefix("socket:") == true)
        #expect(fds.first { $0[0] == "5" }?.last?.contains("ah-progress-") == true)
        #expect(numbers.filter { $0 > 5 }.count == 1, "\(fds)")
        #expect(fds.contains { $0.count == 2 && $0[1] == dir + "/out.ndjson" }, "\(fds) \(dir)")
        // No capability (this suite runs as root in CI: uid 0 without any), and none to regain.
        for set in ["CapEff", "CapPrm", "CapBnd"] { #expect(probe[set]?.stringValue == "0000000000000000", "\(set): \(probe)") }
        // The seccomp filter: the host is out of reach of signals, ptrace and its memory; the
        // library may still signal itself; no new user namespace.
        #expect(probe["Seccomp"]?.stringValue == "2")
        #expect(probe["killHost"]?.intValue == Int(EPERM), "\(probe)")
        #expect(probe["killGroup"]?.intValue == Int(EPERM), "\(probe)")
        #expect(probe["killSelf"] == 0, "\(probe)")
        #expect(probe["ptraceHost"]?.intValue == Int(EPERM), "\(probe)")
        #expect(probe["readHost"]?.intValue == Int(EPERM), "\(probe)")
        #expect(probe["userNamespace"]?.intValue == Int(EPERM), "\(probe)")
        // /proc/<host>/mem: the kernel lets a process of the same user open it unless the host holds
        // capabilities its runner does not (a root host); docs/isolation.md says so.
        if getuid() == 0 { #expect(probe["openHostMemory"]?.intValue == Int(EACCES), "\(probe)") }
        // A process group of its own: the terminal's Ctrl-C reaches the host, not the runner.
        #expect(probe["ownGroup"] == 1)
    }
}

/// `analytics-host run --isolate=Key`, as a user runs it: a library that segfaults on event 1,000
/// no longer ends the command (it used to exit 139 and take every destination's events with it).
@Suite struct IsolationCommandTests {
    /// A plugins directory with File and the isolated fixture, and settings enabling both (File
    /// writes dir/file.ndjson, Isolated dir/isolated.ndjson: their jails are granted dir).
    func fileAndIsolated(in dir: String) throws -> (plugins: String, settings: String) {
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("isolated", in: plugins)
        let settings = dir + "/settings.json"
        makeRunnerWritable(dir)
        try #"{"integrations":{"File":{"path":"\#(dir)/file.ndjson","isolation":{"allow":["files:\#(dir)"]}},"Isolated":{"path":"\#(dir)/isolated.ndjson","isolation":{"allow":["files:\#(dir)"]}}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        return (plugins, settings)
    }

    @Test func runCompletesWhenAnIsolatedLibrarySegfaults() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let (plugins, settings) = try fileAndIsolated(in: dir)
        let input = (1...2000).map { n in #"{"type":"track","event":"\#(n == 1000 ? "Crash" : "E")","anonymousId":"a","properties":{"n":\#(n)}}"# }
            .joined(separator: "\n") + "\n"
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--isolate=Isolated", "--drain-timeout", "0"],
            stdin: Data(input.utf8))
        #expect(result.status == 5, "one event failed for good: \(result.stderr)")
        #expect(result.stdout.contains("2000 events accepted, 0 rejected"))
        let rows = result.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.contains(["File", "2000", "2000", "0", "0", "0", "0", "0", "-", "-"]), "\(result.stdout)")
        let isolated = try #require(rows.first { $0.first == "Isolated" })
        #expect(Array(isolated[1...7]) == ["2000", "1999", "0", "0", "1", "0", "0"], "\(result.stdout)")
        #expect(isolated[9] == "3", "three restarts")
        #expect(result.stderr.contains("was killed by signal 11 (SIGSEGV) while processing track \"Crash\" event"))
        #expect(!result.stdout.contains("retried: events sent again"), "the columns are explained in run --help")
    }

    /// Ctrl-C in a terminal signals the whole foreground process group. A runner is in a group of
    /// its own, so only the host hears it and stops its runners in order: File, which writes what
    /// it holds at flush, writes every event; nothing is restarted. (When the runners shared the
    /// host's group, SIGINT killed them first: a "crash", a restart, and File's events lost.)
    @Test func ctrlCStopsTheHostWhichStopsItsRunnersInOrder() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let (plugins, settings) = try fileAndIsolated(in: dir)
        var input: [Int32] = [0, 0]
        #expect(pipe(&input) == 0)
        _ = fcntl(input[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, dir + "/stdout", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)  // the host leads a group, as a shell's foreground job
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        let arguments = [try HostBinary.path(), "run", "--settings", settings, "--plugins", plugins, "--storage", dir + "/state",
                         "--isolate", "--drain-timeout", "0", "--quiet"]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var host: pid_t = 0
        #expect(posix_spawn(&host, arguments[0], &actions, &attributes, argv, environ) == 0)
        close(input[0])
        let lines = (1...100).map { #"{"type":"track","event":"E","anonymousId":"a","properties":{"n":\#($0)}}"# }
            .joined(separator: "\n") + "\n"
        lines.withCString { _ = write(input[1], $0, strlen($0)) }
        // Both runners are up and busy once Isolated (which writes each event as it gets it) has them all.
        let deadline = monotonicSeconds() + 60
        func count(_ file: String) -> Int {
            ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        while count(dir + "/isolated.ndjson") < 100 && monotonicSeconds() < deadline { usleep(10_000) }
        #expect(count(dir + "/isolated.ndjson") == 100)
        kill(-host, SIGINT)
        var status: Int32 = 0
        waitpid(host, &status, 0)
        close(input[1])
        let stdout = (try? String(contentsOfFile: dir + "/stdout", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: dir + "/stderr", encoding: .utf8)) ?? ""
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 0, "exit \(status): \(stderr)")
        #expect(stdout.contains("(interrupted)"), "\(stdout)")
        #expect(count(dir + "/file.ndjson") == 100, "\(stderr)")
        #expect(!stderr.contains("killed by signal"), "\(stderr)")
        let rows = stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for key in ["File", "Isolated"] {
            #expect(rows.first { $0.first == key }?.last == "0", "\(key) restarted: \(stdout)")
        }
    }
}

/// Under `--isolate` (every library) a library that only adds timeline plugins stays in-process and
/// keeps working; asked for by name it runs in its own process, its plugins called across the
/// boundary: a plugin that crashes or hangs its process costs one event its plugin (reported,
/// the event goes on), and the plugin is back once the process restarted.
@Suite struct IsolationScopeTests {
    func start(_ isolation: IsolationConfiguration, settings: JSONObject, dir: String, errors: ErrorLog,
               configure: (inout Configuration) -> Void = { _ in }) throws -> Analytics {
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        try FixtureBuilder.library("timeline_plugins", in: plugins)
        try FixtureBuilder.library("noop", in: plugins)
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state")
        config.settingsLocation = .defaultsOnly
        config.trackApplicationLifecycleEvents = false
        config.defaultSettings = Settings(["integrations": .object(settings)])
        config.pluginsDirectory = plugins
        config.isolation = isolation
        config.isolation.scanCacheFile = ""
        config.errorHandler = errors.handler
        configure(&config)
        return Analytics(configuration: config)
    }

    @Test func everyLibraryMeansEveryDestinationTimelineLibrariesStayInProcess() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let errors = ErrorLog()
        let analytics = try start(IsolationConfiguration(allLibraries: .process), settings: ["Noop": [:]], dir: dir, errors: errors)
        #expect(analytics.isolatedLibraries.map(\.key) == ["Noop"])
        #expect(analytics.pluginScan.libraries.map(\.key) == ["Timeliner"])
        #expect(analytics.find(key: "Noop") is ProcessDestination)
        analytics.track("Drop")  // the in-process timeline plugin drops it before any destination
        analytics.track("Keep")
        #expect(analytics.flush())
        #expect(analytics.shutdown())
        #expect(analytics.timeline.stats(forKey: "Noop")?.delivered == 1)
        #expect(errors.messages.isEmpty, "\(errors.messages)")
    }

    @Test func aTimelineLibraryAskedByNameRunsInItsOwnProcess() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let errors = ErrorLog()
        let analytics = try start(IsolationConfiguration(byKey: ["Timeliner": .process]), settings: ["Noop": [:]], dir: dir, errors: errors)
        #expect(analytics.isolatedLibraries.map(\.key) == ["Timeliner"])
        #expect(analytics.timeline.plugins(of: .utility).contains { $0 is ProcessUtilityLibrary })
        // Its plugin is on the client's timeline as soon as the client exists, as in-process.
        let plugin = try #require(analytics.timeline.plugins(of: .before).compactMap { $0 as? NativeTimelinePlugin }.first)
        #expect(plugin.ownerKey == "Timeliner")
        analytics.track("Drop")
        analytics.track("Keep")
        #expect(analytics.flush())
        #expect(analytics.timeline.stats(forKey: "Noop")?.delivered == 1)
        #expect(analytics.shutdown())
        #expect(plugin.isReleased)
        #expect(errors.messages.isEmpty, "\(errors.messages)")
    }

    @Test func aPluginThatCrashesItsProcessCostsOneEventItsPluginAndComesBack() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let errors = ErrorLog()
        let analytics = try start(IsolationConfiguration(byKey: ["Timeliner": .process]), settings: ["Noop": [:]], dir: dir, errors: errors)
        analytics.track("Drop")
        analytics.track("PluginCrash")  // returns once the crash was handled: the event went on unchanged
        #expect(analytics.flush(), "after the restart: the new process's create added the plugin again")
        analytics.track("Drop")
        analytics.track("Keep")
        #expect(analytics.flush())
        #expect(analytics.timeline.stats(forKey: "Noop")?.delivered == 2, "PluginCrash and Keep")
        #expect(analytics.shutdown())
        #expect(errors.messages.contains { $0.hasPrefix("plugin Timeliner: process failed: its process ended") && $0.hasSuffix("event passed on unchanged") },
                "\(errors.messages)")
        #expect(errors.messages.contains { $0.contains("(process-isolated) was killed by signal 11 (SIGSEGV) while running timeline plugin Timeliner") },
                "\(errors.messages)")
    }

    @Test func aPluginThatHangsIsKilledAtTheDeadlineAndComesBack() throws {
        let dir = makeTempDirectory("loader")
        defer { FixtureBuilder.remove(dir) }
        let errors = ErrorLog()
        let analytics = try start(IsolationConfiguration(byKey: ["Timeliner": .process]), settings: ["Noop": [:]], dir: dir, errors: errors) {
            $0.hookTimeout = 0.5
        }
        analytics.track("PluginHang")
        #expect(analytics.flush())
        analytics.track("Drop")
        analytics.track("Keep")
        #expect(analytics.flush())
        #expect(analytics.timeline.stats(forKey: "Noop")?.delivered == 2, "PluginHang and Keep")
        #expect(analytics.shutdown())
        #expect(errors.messages.contains("plugin Timeliner: process failed: did not answer within 0.5 s; its process was killed; event passed on unchanged"),
                "\(errors.messages)")
        #expect(errors.messages.contains { $0.contains("was killed by signal 9 (SIGKILL) while running timeline plugin Timeliner, which did not answer within 0.5 s") },
                "\(errors.messages)")
    }
}
