import AnalyticsCore
import Foundation
import Glibc

/// `analytics-host run`: newline-delimited events in, every destination fed, a summary out.
enum RunCommand {
    static let help = """
        usage: analytics-host run --settings FILE --plugins DIR [--write-key KEY] [--storage DIR]
                                  [--input FILE|-] [--settings-refresh SECONDS]
                                  [--live-plugins FILE] [--allow-insecure-plugins] [--quiet]

        Reads one JSON event per line (spec-shaped: type, event/name/traits…; messageId, timestamp,
        context and integrations are kept when given), runs each through the whole pipeline — source
        plugins, every loaded integration with its own timeline and filters, and Segment.io — then
        flushes (bounded wait) and prints what each destination received, delivered, dropped and
        still holds. Events the Segment.io destination could not upload stay queued on disk in the
        storage directory and go out on the next run.

          --settings FILE   settings JSON in the CDN shape (integrations, plan, middlewareSettings)
          --plugins DIR     directory of integration libraries (*.so)
          --write-key KEY   source write key (default: integrations["Segment.io"].apiKey)
          --storage DIR     user state and the upload queue (default: ~/.local/share/analytics-host/KEY)
          --input FILE|-    events to read (default: standard input)
          --settings-refresh SECONDS  re-read the settings file this often (destinations it adds
                            are created, those it removes destroyed; bad edits are reported and ignored)
          --live-plugins FILE  JavaScript bundle for LivePlugins (libliveplugins.so in --plugins)
                            to run on first start, offline, or when the settings' edgeFunction
                            bundle cannot be downloaded
          --allow-insecure-plugins  load libraries even if group/others may write them
          --quiet           no progress line on a terminal

        Exit status: 0 every line accepted; 1 some lines were rejected (each is reported with its
        line number); 2 usage error or unreadable settings/input; 3 lines fine but some plugin
        library could not be loaded or created. SIGINT/SIGTERM: stop reading, flush, persist, exit 0
        (or 1/3 as above); a second signal exits at once.
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        let opts = try Options(arguments,
                               valued: ["--settings", "--plugins", "--write-key", "--storage", "--input", "--settings-refresh",
                                        "--live-plugins"],
                               flags: ["--allow-insecure-plugins", "--quiet"])
        if opts.has("--help") { print(help); return 0 }
        let settingsPath = try opts.required("--settings")
        let pluginsDir = try opts.required("--plugins")
        let settings = try HostSetup.readSettings(path: settingsPath)

        let inputPath = opts["--input"] ?? "-"
        let fd: Int32 = inputPath == "-" ? 0 : open(inputPath, O_RDONLY)
        guard fd >= 0 else { throw UsageError("cannot read input \(inputPath): \(String(cString: strerror(errno)))") }
        defer { if fd > 0 { close(fd) } }

        let writeKey = opts["--write-key"] ?? settings.integrations["Segment.io"]?["apiKey"]?.stringValue ?? "analytics-host"
        let errors = ErrorPrinter()
        var config = Configuration(writeKey: writeKey, storageDirectory: opts["--storage"])
        config.settingsLocation = .file(settingsPath)
        if let refresh = opts["--settings-refresh"] {
            guard let seconds = Double(refresh), seconds > 0 else { throw UsageError("--settings-refresh needs a number of seconds") }
            config.settingsRefreshInterval = seconds
        }
        config.trackApplicationLifecycleEvents = false
        // Batch ingestion: a slow destination slows reading rather than losing events.
        config.destinationOverflow = .wait(seconds: 30)
        config.errorHandler = errors.handler
        config.logHandler = { level, message in
            if level >= .info { FileHandle.standardError.write(Data("analytics-host: \(level.rawValue): \(message)\n".utf8)) }
        }
        config.pluginsDirectory = pluginsDir
        if let bundle = opts["--live-plugins"] {
            guard FileManager.default.isReadableFile(atPath: bundle) else {
                throw UsageError("cannot read --live-plugins \(bundle)")
            }
            // Absolute, so errors name the file wherever the library reads it from.
            config.pluginOptions["LivePlugins"] = ["fallbackBundle": .string(URL(fileURLWithPath: bundle).standardizedFileURL.path)]
        }
        config.allowInsecurePluginPermissions = opts.has("--allow-insecure-plugins")

        StopSignal.install()
        let analytics = Analytics(configuration: config)
        let progress = Progress(enabled: !opts.has("--quiet") && isatty(2) == 1)

        var reader = LineReader(fd: fd)
        var accepted = 0, rejected = 0
        while !StopSignal.requested {
            var problem: String?
            let more = reader.next { line in
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }  // blank lines are skipped
                do {
                    guard case .object(let payload) = try JSON(parsingUTF8: line) else {
                        problem = "not a JSON object"
                        return
                    }
                    try analytics.process(payload: payload)
                    accepted += 1
                } catch let e as JSONParseError {
                    problem = e.description
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
        progress.finish()
        let interrupted = StopSignal.requested
        if interrupted { FileHandle.standardError.write(Data("analytics-host: stopping: flushing and saving what is left\n".utf8)) }

        let complete = analytics.shutdown()
        print(Summary.render(analytics: analytics, accepted: accepted, rejected: rejected, interrupted: interrupted))
        if !complete { FileHandle.standardError.write(Data("analytics-host: some destinations did not finish in time; queued events are kept for the next run\n".utf8)) }
        if rejected > 0 { return 1 }
        return errors.pluginProblems > 0 ? 3 : 0
    }
}

/// Prints errors as they happen, one line each, and counts plugin problems for the exit status.
final class ErrorPrinter: Sendable {
    private let pluginProblemCount = Locked(0)
    var pluginProblems: Int { pluginProblemCount.withLock { $0 } }

    var handler: @Sendable (AnalyticsError) -> Void {
        { [self] error in
            switch error {
            case .loader: pluginProblemCount.withLock { $0 += 1 }
            case .plugin(_, let message) where message.hasPrefix("could not be created"): pluginProblemCount.withLock { $0 += 1 }
            default: break
            }
            FileHandle.standardError.write(Data("analytics-host: \(error)\n".utf8))
        }
    }
    func line(_ number: Int, _ problem: String) {
        FileHandle.standardError.write(Data("analytics-host: input line \(number): \(problem)\n".utf8))
    }
}

/// "events, events/s" on standard error while a long input is read from a terminal session.
final class Progress {
    private let enabled: Bool
    private let start = monotonicSeconds()
    private var last = monotonicSeconds()
    private var shown = false
    init(enabled: Bool) { self.enabled = enabled }

    func tick(_ count: Int) {
        guard enabled, count & 0x3FF == 0 else { return }
        let now = monotonicSeconds()
        guard now - last >= 0.25 else { return }
        last = now
        shown = true
        let rate = Double(count) / max(now - start, 1e-9)
        FileHandle.standardError.write(Data("\r\(count) events, \(Int(rate)) events/s   ".utf8))
    }

    func finish() { if shown { FileHandle.standardError.write(Data("\n".utf8)) } }
}
