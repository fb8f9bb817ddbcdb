import AnalyticsTestSupport
import CProcessControl
import Foundation
import Glibc
import Testing
@testable import AnalyticsCore

/// The process-mode jail against a hostile library (Tests/Fixtures/hostile.c) run next to the File
/// example in-process: every attack is refused, the host survives it and reports it, and the other
/// destination gets every event.
@Suite struct IsolationJailTests {
    typealias Setup = IsolatedBesideFile

    func start(dir made: String? = nil, hostileSettings: JSONObject = [:], configure: (inout Configuration) -> Void = { _ in }) throws -> Setup {
        let dir = made ?? makeTempDirectory("jail")
        // Its output goes to its own directory (the storage directory the host gives it).
        let own = dir + "/state/plugins/Hostile"
        var settings: JSONObject = ["path": .string(own + "/hostile.ndjson"), "isolation": "process"]
        settings.merge(hostileSettings)
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        return try IsolatedBesideFile(fixture: "hostile", key: "Hostile", settings: settings, output: own + "/hostile.ndjson", in: dir, configure: configure)
    }

    func lines(_ path: String) -> [JSON] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSON(parsing: String($0)) }
    }

    @Test func aGarbageResultsFrameEndsThatRunnerAndIsReportedAndTheHostGoesOn() throws {
        let s = try start()
        defer { FixtureBuilder.remove(s.dir) }
        for n in 1...50 { s.analytics.track(n == 20 ? "Garbage" : "E", properties: ["n": .number(Double(n))]) }
        #expect(s.analytics.shutdown())

        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((file.received, file.delivered, file.failed) == (50, 50, 0), "the other destination gets everything")
        #expect(lines(s.fileOutput).count == 50)
        let hostile = try #require(s.analytics.timeline.stats(forKey: "Hostile"))
        #expect(hostile.received == 50)
        #expect(hostile.failed == 1, "the event whose call forged the frame is given up after maxAttempts")
        let seen = Set(lines(s.libraryOutput).compactMap { $0["properties"]?["n"]?.intValue })
        #expect(seen.isSuperset(of: Set(1...50).subtracting([20])), "every other event reached the library")
        let reports = s.errors.messages.filter {
            $0.contains("sent the host a malformed frame (results frame claims 4294967295 outcomes in 4 bytes) and was ended")
        }
        #expect(reports.count == 3, "\(s.errors.messages)")
        #expect(reports.allSatisfy { $0.hasPrefix("plugin Hostile: library \(s.dir)/plugins/libhostile.so (process-isolated)") })
    }

    /// The attacks of hostile.c's "Attacks" event, once as it tried them.
    func attacks(_ s: Setup) throws -> JSON {
        try #require(lines(s.libraryOutput).first { $0["killHostThread"] != nil })
    }

    /// A thread of this (the host's) process that is not its main thread.
    func hostThread() throws -> Int {
        let tids = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { Int($0) }
        return try #require(tids.first { $0 != Int(getpid()) })
    }

    /// A TCP socket listening on 127.0.0.1 (closed by the caller) and its port.
    func listener() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Settings that aim the attacks at this process's files and ports: a secret file (as the
    /// host's settings or queue would be), a file outside the library's directory, a port, a
    /// pathname unix socket anyone may connect to (as a D-Bus session's or an ssh-agent's).
    func aimed(_ dir: String, port: Int, unix: String? = nil) throws -> JSONObject {
        try "write-key".write(toFile: dir + "/secret.json", atomically: true, encoding: .utf8)
        var o: JSONObject = ["thread": .string(String(try hostThread())), "secret": .string(dir + "/secret.json"),
                             "outside": .string(dir + "/outside.txt"), "port": .string(String(port))]
        if let unix { o["unix"] = .string(unix) }
        return o
    }

    /// A unix socket listening at `path` (mode 0777: the kernel lets any user connect; only the
    /// jail stands in the way), closed by the caller.
    static func unixListener(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 && listen(fd, 8) == 0 }
        }
        try #require(bound, "cannot listen at \(path): errno \(errno)")
        chmod(path, 0o777)
        return fd
    }

    /// The attacks on sockets and on the host's scheduling, refused (hostile.c's names).
    static let socketAndSchedulingAttacks = ["unixConnect", "unixDgram", "sendtoAddress", "reniceHost", "reniceUser", "ioprioHost",
                                             "affinityHost", "schedulerHost", "pdeathsig"]
    /// The system calls those attacks make, each reported once.
    static let socketAndSchedulingCalls = ["socketpair", "sendto", "setpriority", "ioprio_set", "sched_setaffinity", "sched_setscheduler", "prctl"]

    @Test func signalsResourceLimitsTerminalsAndNewProcessesAreRefusedReportedOnceAndTheHostGoesOn() throws {
        let dir = makeTempDirectory("jail")
        let port = try listener()
        defer { close(port.fd) }
        let unix = try Self.unixListener(dir + "/session.sock")
        defer { close(unix) }
        let s = try start(dir: dir, hostileSettings: try aimed(dir, port: port.port, unix: dir + "/session.sock")) { $0.isolation.maxThreads = 32 }
        defer { FixtureBuilder.remove(s.dir) }
        s.analytics.track("Before")
        s.analytics.track("Attacks")
        s.analytics.track("Attacks")
        s.analytics.track("After")
        #expect(s.analytics.shutdown())

        let a = try attacks(s)
        let eperm = Int(EPERM)
        #expect(a["hostThread"]?.intValue ?? 0 > 0, "the host has threads to aim at: \(a)")
        for name in ["killHostThread", "tgkillHostThread", "sigqueueHost", "setown", "setownEx", "setsig", "prlimitHost",
                     "tiocsti", "fork", "cloneProcess", "execve", "udp", "memfd", "ioUring"] {
            #expect(a[name]?.intValue == eperm, "\(name): \(a)")
        }
        #expect(a["prlimitSelf"]?.intValue == 0, "its own limits stay readable")
        for name in Self.socketAndSchedulingAttacks { #expect(a[name]?.intValue == eperm, "\(name): \(a)") }
        #expect(a["streamPair"]?.intValue == 0, "a connected stream pair is fine: \(a)")
        #expect(a["reniceSelf"]?.intValue == 0, "its own priority is its own: \(a)")
        #expect(a["connect"]?.intValue == eperm, "no socket but AF_UNIX: \(a)")
        #expect(a["readSecret"]?.intValue == Int(EACCES), "nothing of the file system beyond its own directory: \(a)")
        #expect(a["writeOutside"]?.intValue == Int(EACCES), "\(a)")
        #expect(!FileManager.default.fileExists(atPath: s.dir + "/outside.txt"))
        #expect(a["shadow"]?.intValue == Int(EACCES), "\(a)")
        if a["cgroupLimit"]?.intValue != -1 {
            #expect(a["cgroupLimit"]?.intValue == Int(EACCES), "its memory limit is not its to raise: \(a)")
        }
        if RunnerPidsCgroup.parent.path != nil {
            let made = a["threadsMade"]?.intValue ?? -1
            #expect(made > 0 && made < 32, "threads, but no more than its pids cgroup holds: \(a)")
        }
        #expect(a["thread"]?.intValue == 0, "threads are fine")
        #expect(a["ownSession"]?.intValue == 1, "a session of its own: no controlling terminal")
        #expect(a["nofile"]?.intValue == 1024)
        #expect(a["fsize"]?.intValue == 1 << 30)
        let names = (a["env"]?.stringValue ?? "").split(separator: ",")
        #expect(names.allSatisfy { IsolatedProcess.keepsVariable($0) || $0 == "SWIFT_BACKTRACE" }, "cleaned environment: \(names)")
        #expect(ah_process_dumpable() == 0, "no process of the same user opens the host's /proc files")

        let file = try #require(s.analytics.timeline.stats(forKey: "File"))
        #expect((file.delivered, file.failed) == (4, 0), "the other destination gets everything")
        let hostile = try #require(s.analytics.timeline.stats(forKey: "Hostile"))
        #expect((hostile.delivered, hostile.failed, hostile.restarts) == (4, 0, 0), "refused calls fail in the library; nothing crashes")
        #expect(lines(s.libraryOutput).compactMap { $0["event"]?.stringValue } == ["Before", "After"])
        for call in ["kill", "tgkill", "rt_sigqueueinfo", "fcntl", "prlimit64", "ioctl", "clone", "execve", "socket", "memfd_create",
                     "io_uring_setup"] + Self.socketAndSchedulingCalls {
            let reports = s.errors.messages.filter { $0.contains("(process-isolated) called \(call), which its jail refuses") }
            #expect(reports.count == 1, "\(call) reported once: \(s.errors.messages)")
            #expect(reports.allSatisfy { $0.hasPrefix("plugin Hostile: library \(s.dir)/plugins/libhostile.so") })
        }
    }

    /// The host's standard error is the host's: what a runner prints comes out prefixed with its
    /// library's key, control characters defused.
    @Test func whatARunnerPrintsIsPrefixedWithItsLibraryAndDefused() throws {
        let dir = makeTempDirectory("jail")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"File":{"path":"\#(dir)/file.ndjson"},"Hostile":{"isolation":"process"}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let input = #"{"type":"track","event":"Print","anonymousId":"a"}"# + "\n"
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "run",
            "--settings", settings, "--plugins", plugins, "--storage", dir + "/state", "--drain-timeout", "0"],
            stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.contains("runner Hostile: analytics-host: every event delivered"), "\(result.stderr)")
        #expect(lines.contains("runner Hostile: ?[1A?[2Kcleared"), "\(result.stderr)")
        #expect(lines.contains("runner Hostile: on standard output"), "\(result.stderr)")
        #expect(!lines.contains { $0.hasPrefix("analytics-host: every event") }, "nothing passes for the host's own")
        #expect(!result.stderr.contains("\u{1B}"))
    }

    /// The same library, granted the network and the test's directory in its settings: what it
    /// asked for works, the rest stays refused.
    @Test func whatTheSettingsGrantWorks() throws {
        let dir = makeTempDirectory("jail")
        let port = try listener()
        defer { close(port.fd) }
        let unix = try Self.unixListener(dir + "/session.sock")
        defer { close(unix) }
        var settings = try aimed(dir, port: port.port, unix: dir + "/session.sock")
        settings["isolation"] = ["mode": "process", "allow": ["network", .string("files:" + dir)]]
        makeRunnerWritable(dir)
        let s = try start(dir: dir, hostileSettings: settings)
        defer { FixtureBuilder.remove(s.dir) }
        s.analytics.track("Attacks")
        #expect(s.analytics.shutdown())
        let a = try attacks(s)
        #expect(a["connect"]?.intValue == 0, "granted: \(a)")
        #expect(a["udp"]?.intValue == 0, "granted: \(a)")
        #expect(a["unixConnect"]?.intValue == 0, "granted: \(a)")
        #expect(a["readSecret"]?.intValue == 0, "granted: \(a)")
        #expect(a["writeOutside"]?.intValue == 0, "granted: \(a)")
        #expect(FileManager.default.fileExists(atPath: s.dir + "/outside.txt"))
        #expect(a["killHostThread"]?.intValue == Int(EPERM), "not granted, still refused")
        #expect(!s.errors.messages.contains { $0.contains("called socket") }, "\(s.errors.messages)")
        #expect(s.errors.messages.contains { $0.contains("called kill, which its jail refuses") })
    }

    /// A root host's runner is not root: it runs as `RunnerUser` (65534) with no supplementary
    /// groups. Even where its grants let Landlock pass (`read:/etc`, `files:` a root-owned
    /// directory), root's files stay root's: /etc/shadow cannot be read, a root-owned file cannot
    /// be written. The host reports the grant its runner user cannot use; the host delivers.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func asRootTheRunnerIsAnotherUserAndRootsFilesStayRoots() throws {
        let dir = makeTempDirectory("jail")
        let port = try listener()
        defer { close(port.fd) }
        let rootOnly = dir + "/root-only"
        mkdir(rootOnly, 0o755)
        try "root's".write(toFile: rootOnly + "/owned-by-root", atomically: true, encoding: .utf8)
        chmod(rootOnly + "/owned-by-root", 0o644)
        var settings = try aimed(dir, port: port.port)
        settings["secret"] = "/etc/shadow"
        settings["outside"] = .string(rootOnly + "/owned-by-root")
        settings["isolation"] = ["mode": "process", "allow": ["read:/etc", .string("files:" + rootOnly)]]
        let s = try start(dir: dir, hostileSettings: settings)
        defer { FixtureBuilder.remove(s.dir) }
        s.analytics.track("Before")
        s.analytics.track("Attacks")
        s.analytics.track("After")
        #expect(s.analytics.shutdown())
        let a = try attacks(s)
        #expect(a["uid"]?.intValue == 65534, "getuid() in the runner: \(a)")
        #expect(a["readSecret"]?.intValue == Int(EACCES), "/etc/shadow, though Landlock lets it read /etc: \(a)")
        #expect(a["shadow"]?.intValue == Int(EACCES), "\(a)")
        #expect(a["writeOutside"]?.intValue == Int(EACCES), "a root-owned file in a granted directory: \(a)")
        #expect((try? String(contentsOfFile: rootOnly + "/owned-by-root", encoding: .utf8)) == "root's")
        #expect(lines(s.fileOutput).count == 3, "the other destination gets everything")
        #expect(lines(s.libraryOutput).count == 3, "its own directory is its user's: it writes there")
        #expect(s.errors.messages.contains { $0.contains("files:\(rootOnly)") && $0.contains("uid 65534 gid 65534") && $0.contains("cannot write") },
                "the grant its user cannot use is reported: \(s.errors.messages)")
    }

    /// As root, libraries in a directory only root may pass (`/root/…` is mode 700 in every
    /// container) load and deliver in both modes: the host hands the scanner and each runner the
    /// library open (RunnerFiles), so the runner, uid 65534, needs no path to it. A C library
    /// (File) and a Swift one (Metrics), each writing beneath a directory granted to it.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func asRootLibrariesInADirectoryOnlyRootMayPassLoadAndDeliverInBothModes() throws {
        let dir = makeTempDirectory("jail")
        defer { FixtureBuilder.remove(dir) }
        let closed = dir + "/closed"
        mkdir(closed, 0o700)
        try FixtureBuilder.plugin("Plugins/File/file.c", in: closed, as: "libfile.so")
        try FileManager.default.copyItem(atPath: SwiftPluginFiles.path("MetricsIntegration"), toPath: closed + "/libMetricsIntegration.so")
        var info = stat()
        #expect(stat(closed, &info) == 0 && info.st_mode & 0o777 == 0o700 && info.st_uid == 0, "the runner's user cannot pass it")
        for mode in ["in-process", "process"] {
            let out = dir + "/out-" + mode
            mkdir(out, 0o755)
            makeRunnerWritable(out)
            func entry(_ settings: JSONObject) -> JSON {
                var settings = settings
                if mode == "process" { settings["isolation"] = ["mode": "process", "allow": [.string("files:" + out)]] }
                return .object(settings)
            }
            let errors = ErrorLog()
            var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state-" + mode)
            config.settingsLocation = .defaultsOnly
            config.trackApplicationLifecycleEvents = false
            config.defaultSettings = Settings(["integrations": ["File": entry(["path": .string(out + "/file.ndjson")]),
                                                                "Metrics": entry(["path": .string(out + "/metrics.json")])]])
            config.pluginsDirectory = closed
            config.isolation.scanCacheFile = ""  // every library scanned in a runner, now
            config.errorHandler = errors.handler
            config.flushTimeout = 60
            let analytics = Analytics(configuration: config)
            #expect(analytics.pluginScan.problems.isEmpty, "\(mode): \(analytics.pluginScan.problems)")
            for n in 1...3 { analytics.track("Closed", properties: ["n": .number(Double(n))]) }
            #expect(analytics.shutdown())
            for key in ["File", "Metrics"] {
                let stats = try #require(analytics.timeline.stats(forKey: key), "\(mode): \(key) was not created: \(errors.messages)")
                #expect((stats.received, stats.delivered, stats.failed) == (3, 3, 0), "\(mode) \(key): \(errors.messages)")
            }
            #expect(lines(out + "/file.ndjson").count == 3, "\(mode): \(errors.messages)")
            let metrics = try? JSON(parsing: Array((FileManager.default.contents(atPath: out + "/metrics.json") ?? Data())))
            #expect(metrics?["total"]?.intValue == 3, "\(mode): \(errors.messages)")
            #expect(!errors.messages.contains { $0.contains("uid 65534") }, "\(mode): \(errors.messages)")
        }
    }

    /// The library file itself must still be readable by the runner's user (the runner reopens
    /// the file it was handed through /proc/self/fd, which checks the file's own mode): one that
    /// only root may read is refused with the file and the reason, before any runner starts.
    @Test(.enabled(if: geteuid() == 0, "the host must run as root"))
    func asRootALibraryFileOnlyRootMayReadIsRefusedByName() throws {
        let dir = makeTempDirectory("jail")
        defer { FixtureBuilder.remove(dir) }
        let plugins = dir + "/plugins"
        mkdir(plugins, 0o755)
        let library = try FixtureBuilder.library("hostile", in: plugins)
        chmod(library, 0o700)
        let errors = ErrorLog()
        var config = Configuration(writeKey: "wk", storageDirectory: dir + "/state2")
        config.settingsLocation = .defaultsOnly
        config.defaultSettings = Settings(["integrations": ["Hostile": ["isolation": "process"]]])
        config.pluginsDirectory = plugins
        config.isolation.scanCacheFile = ""
        config.errorHandler = errors.handler
        let analytics = Analytics(configuration: config)
        analytics.shutdown()
        #expect(errors.messages.contains { $0.contains(library) && $0.contains("uid 65534 gid 65534") && $0.contains("cannot read it") && $0.contains("mode 700") },
                "\(errors.messages)")
    }

    /// `plugins` shows what each process-mode library is allowed and which jail mechanisms this
    /// kernel provides.
    @Test func pluginsShowsWhatEachLibraryIsAllowedAndTheJailOfThisKernel() throws {
        let dir = makeTempDirectory("jail")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        let settings = dir + "/settings.json"
        try #"{"integrations":{"Hostile":{"isolation":{"mode":"process","allow":["network","files:/var/lib/hostile","bogus"]}}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let result = try FixtureBuilder.capture("/usr/bin/env", ["XDG_CACHE_HOME=\(dir)/cache", try HostBinary.path(), "plugins",
                                                                  "--plugins", plugins, "--settings", settings])
        let text = result.stdout
        let start = try #require(text.range(of: "Hostile  1.0.0"))
        let entry = String(text[start.lowerBound...])
        #expect(entry.contains("isolation  process"), "\(text)")
        #expect(entry.contains("allowed    network, files:/var/lib/hostile"), "\(text)")
        // This machine (x86-64, a distribution kernel) takes the filter; the probe says so.
        #expect(JailMechanisms.seccompFilter && entry.contains("jail       seccomp filter (signals only to itself"), "\(text)")
        #expect(entry.contains(geteuid() == 0 ? "user       uid 65534, gid 65534, no supplementary groups" : "user       the host's uid"), "\(text)")
        let landlock = JailMechanisms.landlockABI
        #expect(entry.contains(landlock > 0 ? "jail       Landlock ABI \(landlock)" : "jail       no Landlock"), "\(text)")
    }

    /// The usual case outside containers: the host runs as an ordinary user, and its runner as the
    /// same user. The attacks that same-user processes may otherwise make (open the host's
    /// /proc/<pid>/mem, signal its threads, set its limits) are refused; the host delivers.
    @Test(.enabled(if: getuid() == 0, "becoming an ordinary user (setpriv to nobody) needs root"))
    func asAnOrdinaryUserTheSameAttacksAreRefused() throws {
        let dir = makeTempDirectory("jail")
        defer { FixtureBuilder.remove(dir) }
        let plugins = try HostBinary.pluginsDirectory(in: dir)
        try FixtureBuilder.library("hostile", in: plugins)
        for owned in ["state", "cache", "out"] {
            mkdir(dir + "/" + owned, 0o755)
            chown(dir + "/" + owned, 65534, 65534)
        }
        let unix = try Self.unixListener(dir + "/out/session.sock")
        defer { close(unix) }
        let settings = dir + "/settings.json"
        let own = dir + "/state/plugins/Hostile"
        try #"{"integrations":{"File":{"path":"\#(dir)/out/file.ndjson"},"Hostile":{"isolation":"process","path":"\#(own)/hostile.ndjson","secret":"\#(settings)","outside":"\#(dir)/out/outside.txt","unix":"\#(dir)/out/session.sock"}}}"#
            .write(toFile: settings, atomically: true, encoding: .utf8)
        let input = ["Before", "Attacks", "After"].map { #"{"type":"track","event":"\#($0)","anonymousId":"a"}"# }.joined(separator: "\n") + "\n"
        // The command (and its runner beside it) copied where that user may run it: the checkout
        // may be in a directory only root may pass (/root/… in a container).
        let bin = dir + "/bin"
        mkdir(bin, 0o755)
        for name in ["analytics-host", PluginRunnerLocator.executableName] {
            try FileManager.default.copyItem(atPath: try BuiltExecutable.path(name), toPath: bin + "/" + name)
        }
        let result = try FixtureBuilder.capture("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--",
            "/usr/bin/env", "XDG_CACHE_HOME=\(dir)/cache", bin + "/analytics-host", "run", "--settings", settings, "--plugins", plugins,
            "--storage", dir + "/state", "--drain-timeout", "0"], stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(lines(dir + "/out/file.ndjson").count == 3, "the other destination gets everything: \(result.stderr)")
        let a = try #require(lines(own + "/hostile.ndjson").first { $0["killHostThread"] != nil }, "\(result.stderr)")
        #expect(a["uid"]?.intValue == 65534)
        #expect([Int(EACCES), Int(EPERM)].contains(a["hostMemory"]?.intValue ?? 0), "the host's memory: \(a)")
        for name in ["killHostThread", "sigqueueHost", "setown", "setsig", "prlimitHost", "tiocsti", "fork", "execve", "udp"]
            + Self.socketAndSchedulingAttacks {
            #expect(a[name]?.intValue == Int(EPERM), "\(name): \(a)")
        }
        #expect(a["readSecret"]?.intValue == Int(EACCES), "the host's settings file: \(a)")
        #expect(a["writeOutside"]?.intValue == Int(EACCES), "\(a)")
        #expect(result.stderr.contains("(process-isolated) called kill, which its jail refuses"), "\(result.stderr)")
        for call in ["socket"] + Self.socketAndSchedulingCalls {
            #expect(result.stderr.components(separatedBy: "called \(call), which its jail refuses").count == 2, "\(call) reported once: \(result.stderr)")
        }
    }
}
