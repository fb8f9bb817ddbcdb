import AnalyticsCore
import Foundation
import Glibc

/// `analytics-host run`: newline-delimited events in, every destination fed, a summary out.
enum RunCommand {
    static let help = """
        usage: analytics-host run --settings FILE [--plugins DIR] [--write-key KEY] [--api-host HOST] [--storage DIR]
                                  [--input FILE|-] [--signals FILE] [--settings-refresh SECONDS] [--hook-timeout SECONDS]
                                  [--drain-timeout SECONDS] [--max-queue-bytes BYTES] [--device]
                                  [--live-plugins FILE] [--allow-insecure-plugins] [--allow-invalid-settings] [--quiet]
                                  [-v | --log-level debug|info|warning|error]
                                  [--isolate[=KEY,...]] [--isolate-memory BYTES] [--runner-user=UID[:GID]]

        Reads one JSON event per line (spec-shaped: type, event/name/traits…; messageId, timestamp,
        context and integrations are kept when given), runs each through the whole pipeline — source
        plugins, every loaded integration with its own timeline and filters, and Segment.io — then
        drains: uploads this run's events and whatever earlier runs left in the storage directory,
        retrying as the server's answers and the retry policy say, for at most --drain-timeout
        seconds, and prints what each destination received, delivered, dropped and still holds.
        Nothing is dropped to keep up: when a destination or the disk queue is full, reading
        waits. Events not uploaded in time stay queued on disk and go out on the next run.

        The input is messages from many people (server mode, as Segment's HTTP API takes them): each
        event keeps its own userId/anonymousId — one with neither is rejected as its line — and its
        own context, to which only context.library is added. A line without a messageId gets one
        derived from the input up to that line, so running the same input again gives the same ids.

          --settings FILE   settings JSON in the CDN shape (integrations, plan, middlewareSettings),
                            checked before anything else as `check-settings` checks it; relative
                            `path`/`…Path` options of integrations are relative to FILE's directory
        """ + "\n" + PluginsDirectoryChoice.helpLines + "\n" + """
          --write-key KEY   source write key (default: integrations["Segment.io"].apiKey); when
                            the settings name another apiKey, run refuses to start (exit 2): the
                            two keys are two sources, and uploads would use the settings' key
          --api-host HOST   where Segment.io uploads, overriding the settings' apiHost, e.g.
                            http://127.0.0.1:PORT/v1 for a local `analytics-host receive`
          --storage DIR     user state and the upload queue (default: ~/.local/share/analytics-host/KEY)
          --input FILE|-    events to read: a file, a FIFO or - for standard input (the default);
                            a line must be UTF-8 and at most 32,768 bytes (the event size limit),
                            others are rejected by line number and the next line is read
          --signals FILE    signals to emit, one JSON object per line ({type, data, timestamp?}),
                            interleaved with the events by timestamp (turn by turn without one);
                            also turns every event into an instrumentation signal
          --settings-refresh SECONDS  re-read the settings file this often (destinations it adds
                            are created, those it removes destroyed; bad edits are reported and ignored)
          --drain-timeout SECONDS  longest wait for uploads after the input ends (default 30)
          --max-queue-bytes BYTES  disk cap of the Segment.io queue (default 67108864); when it is
                            reached, reading waits for uploads to free room
          --hook-timeout SECONDS  how long a loaded library's call may stay stuck (at the end: to
                            stop; while running: while reading waits for its queue; default 10); one
                            whose call has not returned by then is abandoned: its undelivered events
                            are counted and reported, exit status 4
          --live-plugins FILE  JavaScript bundle for LivePlugins (libliveplugins.so in --plugins, else
                            exit 2; a bundle that does not load is reported, exit 3)
                            to run on first start, offline, or when the settings' edgeFunction
                            bundle cannot be downloaded
          --allow-insecure-plugins  load libraries even if group/others may write them
          --device          the input is one device's stream (device mode, the library's default):
                            events without ids get the stored user's (user.json in --storage,
                            changed by identify, alias); context gets this machine's os, device,
                            locale and timezone
          --isolate[=KEY,...]  run every loaded library (or those keys) in a child process of its own
                            (analytics-plugin-runner), as the settings' "isolation": "process" does per
                            key: its crash, exit, hang or memory blow-up ends only that process, which
                            is restarted; events in flight are sent again (see docs/isolation.md)
          --isolate-memory BYTES  memory limit of each such library (default 2147483648; 0: none):
                            a memory cgroup of its own where the host may make one (memory really
                            used), else the address-space limit RLIMIT_AS (reservations count)
          --runner-user=UID[:GID]  who those processes run as when the host runs as root
                            (default 65534:65534, nobody; no supplementary groups)
          --allow-invalid-settings  run on settings that do not validate (problems become warnings)
          --quiet           no progress line on a terminal
          --log-level LEVEL  the least severe log lines printed: debug, info (the default), warning
                            or error; -v is --log-level debug; the environment variable
                            ANALYTICS_HOST_LOG_LEVEL sets the default

        SIGINT/SIGTERM: stop reading, drain, persist, exit as below; a second signal exits at once
        (every event already accepted is on disk and goes out on the next run).

        """ + Summary.legend + "\n" + ExitStatus.help

    static func main(_ arguments: [String]) throws -> Int32 {
        let (arguments, isolation) = try IsolationOptions.extract(arguments)
        let opts = try Options(arguments,
                               valued: ["--settings", "--plugins", "--write-key", "--api-host", "--storage", "--log-level", "--input", "--signals", "--settings-refresh",
                                        "--drain-timeout", "--max-queue-bytes", "--hook-timeout", "--live-plugins", "--isolate-memory"],
                               flags: ["--allow-insecure-plugins", "--allow-invalid-settings", "--quiet", "-v", "--device"])
        if opts.has("--help") { print(help); return 0 }
        let logLevel = try Self.logLevel(opts)
        let settingsPath = try opts.required("--settings")
        let pluginsDir = try PluginsDirectoryChoice.choose(option: opts["--plugins"]).path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: pluginsDir, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("--plugins \(pluginsDir): \(FileManager.default.fileExists(atPath: pluginsDir) ? "not a directory" : "no such directory"); no input was read")
        }
        let settingsFile = try HostSetup.readSettings(path: settingsPath)
        for p in settingsFile.warnings {
            let text = "warning: settings \(settingsPath): \(p.path.isEmpty ? "" : p.path + ": ")\(p.message)"
            FileHandle.standardError.write(Data("analytics-host: \(TerminalText.escaped(text))\n".utf8))
        }
        if !settingsFile.errors.isEmpty {
            let allowed = opts.has("--allow-invalid-settings")
            for p in settingsFile.errors {
                let text = "\(allowed ? "warning: " : "")settings \(settingsPath): \(p.path.isEmpty ? "" : p.path + ": ")\(p.message)"
                FileHandle.standardError.write(Data("analytics-host: \(TerminalText.escaped(text))\n".utf8))
            }
            if !allowed {
                let n = settingsFile.errors.count
                FileHandle.standardError.write(Data("""
                    analytics-host: settings \(settingsPath) do not validate (\(n) problem\(n == 1 ? "" : "s")); no input was read. \
                    Fix them (`analytics-host check-settings \(settingsPath)` lists the same problems) or pass \
                    --allow-invalid-settings to run with the fallbacks (defaults for bad fields, Segment.io only for an \
                    unusable document, every event dropped for a destination whose filter rule does not compile)

                    """.utf8))
                return ExitStatus.unusable.rawValue
            }
        }

        _ = try Self.writeKey(opts["--write-key"], settings: settingsFile)  // a conflict stops here, before any input
        let inputPath = opts["--input"] ?? "-"
        let fd = try openInput(inputPath)
        if inputPath == "-" && isatty(0) == 1 && isatty(2) == 1 {
            FileHandle.standardError.write(Data("analytics-host: reading events from standard input (one JSON object per line; Ctrl-D ends, --input FILE reads a file)\n".utf8))
        }
        defer { if fd > 0 { close(fd) } }

        let writeKey = try Self.writeKey(opts["--write-key"], settings: settingsFile)
        let errors = ErrorPrinter()
        var config = Configuration(writeKey: writeKey, storageDirectory: opts["--storage"])
        // Many people's messages unless told the input is one device's (docs/command-line.md).
        config.identity = opts.has("--device") ? .device : .server
        config.settingsLocation = .file(settingsPath)
        if let host = opts["--api-host"] { config.segment.apiHost = host }
        if let refresh = opts["--settings-refresh"] {
            guard let seconds = Double(refresh), seconds > 0 else { throw UsageError("--settings-refresh needs a number of seconds") }
            config.settingsRefreshInterval = seconds
        }
        var drainTimeout = 30.0
        if let text = opts["--drain-timeout"] {
            guard let seconds = Double(text), seconds >= 0, seconds.isFinite else { throw UsageError("--drain-timeout needs a number of seconds") }
            drainTimeout = seconds
        }
        if let text = opts["--max-queue-bytes"] {
            guard let bytes = Int(text), bytes > 0 else { throw UsageError("--max-queue-bytes needs a number of bytes") }
            config.maxQueueBytes = bytes
        }
        if let value = opts["--hook-timeout"] {
            guard let seconds = Double(value), seconds > 0 else { throw UsageError("--hook-timeout needs a number of seconds") }
            config.hookTimeout = seconds
        }
        config.trackApplicationLifecycleEvents = false
        // Batch ingestion: a slow destination or a full disk queue slows reading, nothing is dropped.
        config.destinationOverflow = .wait(seconds: .infinity)
        config.segment.whenQueueFull = .waitForRoom
        config.errorHandler = errors.handler
        config.logThreshold = logLevel
        config.logHandler = { [errors] level, message in
            // The library tells both handlers of a failed upload; both write to stderr here.
            if errors.alreadyPrinted(message) { return }
            // In turn with a runner's output lines (LibraryOutput): a long line is not cut into.
            if level >= logLevel { LibraryOutput.writeToStandardError(Array("analytics-host: \(level.rawValue): \(TerminalText.escaped(message))\n".utf8)) }
        }
        config.pluginsDirectory = pluginsDir
        config.isolation.allLibraries = isolation.allLibraries
        config.isolation.byKey = isolation.byKey
        config.isolation.runnerUser = isolation.runnerUser
        if let limit = try IsolationOptions.memoryLimit(opts["--isolate-memory"]) { config.isolation.memoryLimitBytes = limit }
        if let bundle = opts["--live-plugins"] {
            guard FileManager.default.isReadableFile(atPath: bundle) else {
                throw UsageError("cannot read --live-plugins \(bundle)")
            }
            // Absolute, so errors name the file wherever the library reads it from.
            let path = URL(fileURLWithPath: bundle).standardizedFileURL.path
            config.pluginOptions["LivePlugins"] = ["fallbackBundle": .string(path)]
            // In process mode its runner may read the bundle the command hands it, and nothing else of the file system.
            config.isolation.grants["LivePlugins"] = JailGrants(read: [path]).merged(with: config.isolation.grants["LivePlugins"])
        }
        if opts["--signals"] != nil {
            var signals = SignalsConfiguration()
            signals.overflow = .wait(seconds: 30)  // batch input: slow down rather than shed
            config.signals = signals
        }
        config.allowInsecurePluginPermissions = opts.has("--allow-insecure-plugins")

        StopSignal.install()
        let analytics = Analytics(configuration: config)
        if let problem = analytics.storageError {
            // Nothing read yet, nothing accepted: stop before the first line.
            analytics.shutdown()
            throw UsageError("\(problem); no input was read")
        }
        if opts["--live-plugins"] != nil, let missing = liveLibraryMissing(analytics, pluginsDirectory: pluginsDir) {
            analytics.shutdown()
            throw UsageError("\(missing); no input was read")
        }
        if logLevel == .debug {
            let keys = analytics.timeline.plugins(of: .destination).compactMap { ($0 as? DestinationPlugin)?.key }.sorted()
            var lines = ["settings \(settingsPath), plugins directory \(pluginsDir), input \(inputPath == "-" ? "standard input" : inputPath)",
                         config.identity == .server ? "identity: server mode (each event's own ids and context; --device for one device's stream)"
                             : "identity: device mode (the stored user of \(config.storageDirectory)/user.json, this machine's context)",
                         "destinations: \(keys.isEmpty ? "none" : keys.joined(separator: ", "))"]
            if let segment = analytics.find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination {
                lines.append("Segment.io: uploads to \(segment.uploadConfiguration.apiHost), queue in \(segment.queueDirectory), "
                             + "\(segment.backlogEvents) events left by earlier runs")
            }
            for line in lines { FileHandle.standardError.write(Data("analytics-host: debug: \(TerminalText.escaped(line))\n".utf8)) }
        }
        let progress = Progress(enabled: !opts.has("--quiet") && isatty(2) == 1, input: fd)
        let feed = try opts["--signals"].map { path in try SignalFeed(path: path, signals: analytics.signals!, errors: errors) }

        var reader = LineReader(fd: fd, maximumLineBytes: BatchLimits.maxEventBytes)
        var messageIds = InputMessageIDs()
        var accepted = 0, rejected = 0
        while !StopSignal.requested {
            var problem: String?
            let lineNumber = reader.lineNumber + 1  // each call reads exactly one line
            let more = reader.next { next in
                let line: UnsafeBufferPointer<UInt8>
                switch next {
                case .tooLong(let bytes):
                    messageIds.advance(skippedLineOf: bytes)
                    problem = "\(bytes) bytes, over the \(BatchLimits.maxEventBytes)-byte event size limit; skipped"
                    return
                case .text(let text):
                    line = text
                    messageIds.advance(line: UnsafeRawBufferPointer(text))
                }
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }  // blank lines are skipped
                do {
                    guard case .object(var payload) = try JSON(parsingUTF8: line) else {
                        problem = "not a JSON object"
                        return
                    }
                    // Derived, not random: the same input run again does not double-count.
                    if payload["messageId"]?.stringValue == nil { payload["messageId"] = .string(messageIds.current) }
                    feed?.emitDue(before: payload["timestamp"]?.stringValue)
                    try errors.whileReading(line: lineNumber) { try analytics.process(payload: payload) }
                    accepted += 1
                } catch let e as JSONParseError {
                    problem = e.columnDescription
                } catch {
                    problem = "\(error)"
                }
            }
            guard more else { break }
            if let problem {
                rejected += 1
                errors.line(reader.lineNumber, problem)
            }
            progress.tick(accepted)
        }
        if !StopSignal.requested { feed?.emitRest() }
        progress.finish(accepted)
        if let error = reader.readError {
            rejected += 1
            FileHandle.standardError.write(Data("analytics-host: cannot read input \(inputPath) after line \(reader.lineNumber): \(String(cString: strerror(error))); the rest was not read\n".utf8))
        }
        let interrupted = StopSignal.requested
        if interrupted { FileHandle.standardError.write(Data("analytics-host: stopping: flushing and saving what is left\n".utf8)) }

        // Destinations deliver what they hold; a hung one is not waited for longer than --hook-timeout.
        analytics.timeline.flush(timeout: min(config.flushTimeout, config.hookTimeout))
        let segment = analytics.find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination
        let drained = segment?.drain(timeout: interrupted ? 0 : drainTimeout) ?? true
        let complete = analytics.shutdown()
        errors.finish()
        print(Summary.render(analytics: analytics, accepted: accepted, rejected: rejected, interrupted: interrupted,
                             drainTimeout: drained ? nil : drainTimeout))
        if let feed, let stats = analytics.signals?.stats {
            print(Summary.signals(stats, fromFile: feed.accepted, rejected: feed.rejected))
        }
        if let problems = Summary.libraryProblems(analytics.libraryProblems) { print(problems) }
        var outcome = ExitStatus.RunOutcome()
        outcome.rejectedLines = rejected + (feed?.rejected ?? 0)
        outcome.pluginProblems = errors.pluginProblems + analytics.libraryProblems.notCreated.count + analytics.libraryProblems.logged.count
            + analytics.libraryProblems.pluginFailures.count
        for case let destination as DestinationPlugin in analytics.timeline.plugins(of: .destination) {
            guard let stats = analytics.timeline.stats(forKey: destination.key) else { continue }
            outcome.failedForGood += stats.failed
            outcome.stillQueued += stats.queued
            outcome.abandoned += stats.abandoned
        }
        if outcome.abandoned > 0 {
            FileHandle.standardError.write(Data("analytics-host: \(outcome.abandoned) event\(outcome.abandoned == 1 ? "" : "s") abandoned by a hung library (reported above); they are not kept\n".utf8))
        } else if !complete {
            FileHandle.standardError.write(Data("analytics-host: some destinations did not finish in time; queued events are kept for the next run\n".utf8))
        }
        return ExitStatus.of(outcome).rawValue
    }
}

extension RunCommand {
    /// Why `--live-plugins` cannot take effect: no library with the LivePlugins key in the plugins
    /// directory (nil when one was loaded, or refused: that refusal is reported as such, exit 3).
    static func liveLibraryMissing(_ analytics: Analytics, pluginsDirectory: String) -> String? {
        let key = "LivePlugins"
        if analytics.pluginScan.libraries.contains(where: { $0.info.key == key }) || analytics.isolatedLibraries.contains(where: { $0.key == key }) {
            return nil
        }
        if analytics.pluginScan.problems.contains(where: { ($0.file as NSString).lastPathComponent.lowercased().contains("liveplugins") }) {
            return nil
        }
        return "--live-plugins needs the LivePlugins library (libliveplugins.so, built by `make live-plugins`) in --plugins "
            + "\(pluginsDirectory): it is not there, so the bundle would never run"
    }

    /// The source's write key: --write-key, else the settings' Segment.io apiKey, else a
    /// placeholder. The two must agree when both are given: they name sources, and the Segment.io
    /// destination uploads with the settings' key, so a differing --write-key would be ignored
    /// for uploads while it names the storage directory.
    static func writeKey(_ given: String?, settings: HostSetup.SettingsFile) throws -> String {
        let configured = settings.object?["integrations"]?["Segment.io"]?["apiKey"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        if let given, let configured, given != configured {
            throw UsageError("--write-key \(given) differs from the apiKey of integrations[\"Segment.io\"] in \(settings.path) (\(configured)): "
                + "they name two sources, and uploads use the settings' key; drop --write-key or make the two agree. No input was read")
        }
        if let given, given.isEmpty { throw UsageError("--write-key needs a non-empty key") }
        return given ?? configured ?? "analytics-host"
    }

    /// --log-level, else -v (debug), else ANALYTICS_HOST_LOG_LEVEL, else info.
    static func logLevel(_ opts: Options) throws -> LogLevel {
        let names = "debug, info, warning or error"
        if let text = opts["--log-level"] {
            guard let level = LogLevel(rawValue: text.lowercased()) else { throw UsageError("--log-level needs \(names), not '\(text)'") }
            return level
        }
        if opts.has("-v") { return .debug }
        if let text = ProcessInfo.processInfo.environment["ANALYTICS_HOST_LOG_LEVEL"], !text.isEmpty {
            guard let level = LogLevel(rawValue: text.lowercased()) else {
                throw UsageError("ANALYTICS_HOST_LOG_LEVEL needs \(names), not '\(text)'")
            }
            return level
        }
        return .info
    }

    /// The input as a file descriptor: standard input for "-", else a file, FIFO or device opened
    /// for reading. Anything that cannot be read as a stream of lines is a usage error, found
    /// before any event is read.
    static func openInput(_ path: String) throws -> Int32 {
        if path == "-" { return 0 }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("cannot read input \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            close(fd)
            throw UsageError("cannot read input \(path): it is a directory")
        }
        return fd
    }
}

/// Prints errors as they happen, one line each, and counts plugin problems for the exit status.
/// A storage error about one event (a full disk: "event ID not queued: …") is printed once per
/// cause; the repeats are counted and reported by ``finish()``.
final class ErrorPrinter: Sendable {
    private let pluginProblemCount = Locked(0)
    var pluginProblems: Int { pluginProblemCount.withLock { $0 } }
    /// Per-event storage causes in the order first seen, with how many events each hit.
    private let causes = Locked<[(cause: String, count: Int)]>([])

    /// The input line being processed on the reading thread: a problem reported there while the
    /// line is processed (an event too large for Segment.io, found in the fan-out) names it.
    private let reading = Locked<(thread: pthread_t, line: Int)?>(nil)

    @discardableResult
    func whileReading<R>(line: Int, _ body: () throws -> R) rethrows -> R {
        reading.withLock { $0 = (pthread_self(), line) }
        defer { reading.withLock { $0 = nil } }
        return try body()
    }

    /// Delivery problems printed by the error handler, which the library also sends to the log
    /// handler (each once per cause): the log line is then not printed again.
    private let printedDeliveries = Locked<Set<String>>([])

    /// True (once) if `message` was printed as a delivery error.
    func alreadyPrinted(_ message: String) -> Bool {
        printedDeliveries.withLock { $0.remove(message) != nil }
    }

    var handler: @Sendable (AnalyticsError) -> Void {
        { [self] error in
            if case .delivery(let message) = error { printedDeliveries.withLock { _ = $0.insert(message) } }
            if case .invalidEvent(let problem) = error,
               let (thread, line) = reading.withLock({ $0 }), pthread_equal(thread, pthread_self()) != 0 {
                self.line(line, problem)
                return
            }
            switch error {
            case .loader: pluginProblemCount.withLock { $0 += 1 }
            case .plugin(_, let message) where message.hasPrefix("could not be created"): pluginProblemCount.withLock { $0 += 1 }
            case .storage(let message):
                let cause = message.replacing(#/event \S+ /#, with: "event … ", maxReplacements: 1)
                guard cause != message else { break }
                let first = causes.withLock { list -> Bool in
                    if let i = list.firstIndex(where: { $0.cause == cause }) {
                        list[i].count += 1
                        return false
                    }
                    list.append((cause, 1))
                    return true
                }
                if first {
                    FileHandle.standardError.write(Data("analytics-host: \(TerminalText.escaped(error.description)) (further events with this cause are counted, not listed)\n".utf8))
                }
                return
            default: break
            }
            FileHandle.standardError.write(Data("analytics-host: \(TerminalText.escaped(error.description))\n".utf8))
        }
    }

    /// One line per cause that hit more than one event, with the count.
    func finish() {
        for (cause, count) in causes.withLock({ $0 }) where count > 1 {
            FileHandle.standardError.write(Data("analytics-host: storage: \(TerminalText.escaped(cause)) — \(count) events in all\n".utf8))
        }
    }
    func line(_ number: Int, _ problem: String) {
        FileHandle.standardError.write(Data("analytics-host: input line \(number): \(TerminalText.escaped(problem))\n".utf8))
    }
}
