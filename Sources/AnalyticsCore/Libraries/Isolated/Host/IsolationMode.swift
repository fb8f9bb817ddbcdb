/// Where an integration library's code runs.
///
/// `inProcess` (the default, for trusted libraries): loaded into the host, one indirect call per
/// hook; a crash, `_exit` or unbounded allocation in the library ends the host.
/// `process`: loaded by `analytics-plugin-runner` in a child process and fed events in batches
/// over a socket pair; the library cannot tell the difference, and its crash, exit, hang or
/// memory blow-up ends only that child, which is restarted (see ``IsolationConfiguration``).
public enum IsolationMode: String, Sendable, Equatable, CaseIterable {
    case inProcess = "in-process"
    case process = "process"
}

/// How the host isolates loaded libraries (`Configuration.isolation`) and what it allows a
/// process-mode library before giving up on it.
public struct IsolationConfiguration: Sendable, Equatable {
    /// Every loaded library in process mode (`run --isolate`), unless `byKey` says otherwise.
    public var allLibraries: IsolationMode?
    /// The mode of these keys (`run --isolate=Key1,Key2`), over the settings and `allLibraries`.
    public var byKey: [String: IsolationMode] = [:]
    /// Memory limit of each runner, bytes; 0: none. How it is enforced: `memoryLimit`.
    public var memoryLimitBytes: UInt64 = 2 << 30
    /// `automatic`: a memory cgroup per library where the host may make one (memory really
    /// used), else RLIMIT_AS (address space, which counts reservations: keep it well above what
    /// a library reserves); `addressSpace`: RLIMIT_AS always.
    public var memoryLimit = MemoryLimitMechanism.automatic
    /// Times an item (event, update, flush…) is sent to a runner before it is counted failed,
    /// when the runner dies or hangs while processing it.
    public var maxAttempts = 3
    /// A library whose runner crashed this many times within `crashWindow` seconds is disabled:
    /// reported once, its events counted failed from then on.
    public var maxCrashes = 5
    public var crashWindow = 60.0
    /// Wait before restarting a runner after a crash, doubled for each further crash in a row,
    /// at most `maxRestartDelay` seconds.
    public var restartDelay = 0.05
    public var maxRestartDelay = 2.0
    /// Most items in one pipe write.
    public var batchSize = 1024
    /// Each runner's RLIMIT_NOFILE (open descriptors); 0: the host's.
    public var maxOpenFiles: UInt64 = 1024
    /// Each runner's RLIMIT_FSIZE (bytes in one file it writes; past it a write fails with
    /// EFBIG); 0: the host's.
    public var maxFileBytes: UInt64 = 1 << 30
    /// What the application grants libraries beyond the jail, by key (added to what their
    /// settings' `isolation.allow` grants; see `JailGrants`).
    public var grants: [String: JailGrants] = [:]
    /// Most processes and threads of one library's runners together (a pids cgroup, where the
    /// host may make one); 0: no limit.
    public var maxThreads = 256
    /// Where start-up scans are cached (by path, size, mtime). nil: `$XDG_CACHE_HOME` (else
    /// `~/.cache`)`/analytics-host/plugin-scan.json`; "": no cache.
    public var scanCacheFile: String?
    /// Who runners run as when the host runs as root (`RunnerUser`): by default 65534 (nobody,
    /// nogroup), with no supplementary groups. Runners of an ordinary host keep its uid.
    public var runnerUser = RunnerUser.nobody
    /// Largest response body the host's HTTP requests (`AH_EXT_HTTP_REQUESTS`) hold for a
    /// library, in either mode (4 MiB; at most what a frame to a runner carries). A larger one
    /// is refused to the library and its transfer cancelled.
    public var maxHTTPResponseBytes = LibraryHTTPPolicy.defaultMaxResponseBytes

    public init(allLibraries: IsolationMode? = nil, byKey: [String: IsolationMode] = [:]) {
        self.allLibraries = allLibraries
        self.byKey = byKey
    }

    /// How `memoryLimitBytes` holds for a runner started now on this machine, for people to
    /// read: "2147483648 bytes (memory cgroup)", "… (RLIMIT_AS: <why no cgroup>)", or "none".
    public var memoryLimitSummary: String {
        guard memoryLimitBytes > 0 else { return "none" }
        if memoryLimit == .addressSpace { return "\(memoryLimitBytes) bytes (RLIMIT_AS, as configured)" }
        if let reason = IsolatedCgroup.unavailableReason { return "\(memoryLimitBytes) bytes (RLIMIT_AS: no memory cgroup, \(reason))" }
        return "\(memoryLimitBytes) bytes (memory cgroup)"
    }

    /// The runner arguments for `maxOpenFiles` and `maxFileBytes`.
    var fileLimitArguments: [String] {
        (maxOpenFiles > 0 ? ["--max-open-files", String(maxOpenFiles)] : [])
            + (maxFileBytes > 0 ? ["--max-file-bytes", String(maxFileBytes)] : [])
    }

    /// The mode of one library: `byKey` first; else process when the settings'
    /// `integrations[key].isolation` is "process" (or `{"mode": "process", "allow": [...]}`, see
    /// `JailGrants`) or every library is isolated; else in-process.
    public func mode(forKey key: String, settings: Settings?) -> IsolationMode {
        explicitMode(forKey: key, settings: settings) ?? allLibraries ?? .inProcess
    }

    /// The mode asked for this key by name (`byKey`, or the settings), if any.
    public func explicitMode(forKey key: String, settings: Settings?) -> IsolationMode? {
        if let mode = byKey[key] { return mode }
        let isolation = settings?.integrations[key]?["isolation"]
        if (isolation?.stringValue ?? isolation?["mode"]?.stringValue) == IsolationMode.process.rawValue { return .process }
        return nil
    }

    /// The mode a library actually runs in. `allLibraries` covers destinations: a library that is
    /// not one (it adds timeline plugins, each of whose calls would then be a round trip to its
    /// process on the event's path) stays in-process unless asked for by name.
    package func mode(for info: NativeLibraryInfo, settings: Settings?) -> IsolationMode {
        let mode = mode(forKey: info.key, settings: settings)
        if mode == .process, !info.isDestination, explicitMode(forKey: info.key, settings: settings) == nil { return .inProcess }
        return mode
    }
}
