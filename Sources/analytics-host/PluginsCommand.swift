import AnalyticsCore
import Foundation

/// `analytics-host plugins`: what each library in a directory is, or why it was refused —
/// the first thing a plugin author runs (like gst-inspect).
enum PluginsCommand {
    static let help = """
        usage: analytics-host plugins [--plugins DIR] [--json] [--allow-insecure-plugins]
                                      [--settings FILE] [--isolate[=KEY,...]] [--isolate-memory BYTES]
                                      [--storage DIR] [--write-key KEY]

        """ + "\n" + PluginsDirectoryChoice.helpLines + "\n\n" + """
        Loads every *.so in DIR the way `run` does (nothing is created or called beyond the entry
        function and the library's capability lookup) and prints, per library: file, key, version,
        ABI version, language/toolchain, its role (a destination, created from the settings'
        "integrations"; or whole-settings, created at start-up with the whole settings document
        unless integrations[key] is false — without "destination" it adds timeline plugins
        instead of receiving events), the hooks it implements and whether it asks that its events wait
        on disk until answered ("durable", ABI 1.3 AH_EXT_DURABLE; a destination's settings can ask
        the same with "durable": true, see docs/durability.md); for a refused library, the reason.
        Each library is loaded in a process of its own (analytics-plugin-runner; outcomes cached by
        path, size and mtime), so one whose constructor crashes, exits or prints affects only its own
        entry. "isolation" is the mode `run` would use with the same --settings and --isolate:
        "in-process" (the default) or "process"; for "process", "memory" is the runner's memory
        limit (--isolate-memory, as for `run`) and how it holds here (a memory cgroup, or RLIMIT_AS
        and why there is no cgroup), "allowed" what the settings' isolation.allow grants it beyond
        its jail (network, files:PATH, read:PATH), "user" who its runner runs as (the host's uid;
        when the host is root, --runner-user=UID[:GID], default 65534:65534, with no supplementary
        groups) and "jail" which jail mechanisms this kernel provides (seccomp, Landlock and its
        ABI, pids cgroup; see docs/isolation.md). "settings" lists the settings the library reads
        (ABI 1.3 AH_EXT_SETTINGS_SCHEMA: name, type, required or its default, what it does), which
        `check-settings --plugins DIR` and `run` check its settings against.

        "second clients" (ABI 1.2 AH_EXT_CLIENTS, a library's `new Analytics(writeKey)`): the
        queues of the clients a library opened that are on disk in the storage directory `run`
        would use (--storage, else the default for --write-key or the settings' write key, as for
        `run`): per library how many, the bytes they take and, when the host that last stopped
        them left events, how many; then every queue there with the caps (each queue 4 MiB, all
        together 64 MiB, 16 clients per host; a client is not opened while the queues leave no
        room for its share; a queue empty when the host stops is removed). "secondClients" in
        --json, per library and for the storage directory.

        The first line says which directory was listed and, when --plugins was not given, where
        it came from ("directorySource" in --json: option, environment or installed).

        Exit status: 0 all libraries load; 1 some were refused; 2 usage error or DIR unusable
        (missing, unreadable, not a directory or writable by others: nothing was listed).
        """

    static func main(_ arguments: [String]) throws -> Int32 {
        var (arguments, isolation) = try IsolationOptions.extract(arguments)
        let opts = try Options(arguments, valued: ["--plugins", "--settings", "--isolate-memory", "--storage", "--write-key"],
                               flags: ["--json", "--allow-insecure-plugins"])
        if let limit = try IsolationOptions.memoryLimit(opts["--isolate-memory"]) { isolation.memoryLimitBytes = limit }
        if opts.has("--help") { print(help); return 0 }
        let choice = try PluginsDirectoryChoice.choose(option: opts["--plugins"])
        let dir = choice.path
        let settingsFile = try opts["--settings"].map { try HostSetup.readSettings(path: $0) }
        let settings = settingsFile.map { Settings($0.object ?? [:]) }
        // The storage directory `run` would use with the same options.
        let storage = try opts["--storage"] ?? Configuration.defaultStorageDirectory(
            writeKey: settingsFile.map { try RunCommand.writeKey(opts["--write-key"], settings: $0) } ?? opts["--write-key"] ?? "analytics-host")
        let clientQueues = SecondClientQueues.onDisk(in: storage)
        func queues(of info: NativeLibraryInfo) -> [SecondClientQueues.Queue] { clientQueues.filter { $0.libraries.contains(info.key) } }
        let scan = Scan(directory: dir, allowInsecure: opts.has("--allow-insecure-plugins"), user: isolation.runnerUser)
        func mode(_ info: NativeLibraryInfo) -> String { isolation.mode(for: info, settings: settings).rawValue }
        func allowed(_ info: NativeLibraryInfo) -> JailGrants {
            JailGrants(settings: settings?.integrations[info.key]?.objectValue ?? [:]).merged(with: isolation.grants[info.key])
        }
        // The directory itself cannot be listed: that is the one problem, not a refused library.
        let directoryProblem = scan.problems.first {
            switch $0.reason {
            case .directoryMissing, .directoryUnreadable: return true
            case .insecurePermissions: return $0.file == dir
            default: return false
            }
        }

        if opts.has("--json") {
            var entries: [JSON] = scan.libraries.map { i in
                var o: JSONObject = ["file": .string(i.file), "status": "loaded", "key": .string(i.key),
                                     "version": .string(i.version), "abiVersion": .string(i.abiVersion.description),
                                     "language": .string(i.language)]
                o["toolchain"] = i.toolchain.map(JSON.string) ?? .null
                o["hooks"] = .array(i.hooks.names.map(JSON.string))
                o["role"] = .string(i.role.description)
                o["destination"] = .bool(i.isDestination)
                o["wholeSettings"] = .bool(i.wantsWholeSettings)
                o["durable"] = i.durable.map { d in .object(["maxDiskBytes": d.maxDiskBytes.map { .number(JSONNumber($0)) } ?? .null]) } ?? .bool(false)
                o["settings"] = i.settingsSchema.map { schema in
                    .array(schema.settings.map { d in
                        .object(["name": .string(d.name), "types": .array(d.types.names.map(JSON.string)), "required": .bool(d.required),
                                 "default": d.defaultValue ?? .null, "description": .string(d.summary)])
                    })
                } ?? .null
                o["isolation"] = .string(mode(i))
                if mode(i) == IsolationMode.process.rawValue {
                    o["memoryLimit"] = .string(isolation.memoryLimitSummary)
                    let grants = allowed(i)
                    o["allowed"] = .array((grants.network ? ["network"] : []) + grants.files.map { .string("files:" + $0) }
                                          + grants.read.map { .string("read:" + $0) })
                    o["user"] = .string(isolation.runnerUser.summary)
                    o["jail"] = .array(JailMechanisms.summary.map(JSON.string))
                }
                let own = queues(of: i)
                o["secondClients"] = ["queues": .number(JSONNumber(own.count)), "bytes": .number(JSONNumber(own.reduce(0) { $0 + $1.bytes })),
                                      "events": knownEvents(own).map { .number(JSONNumber($0)) } ?? .null,
                                      "onDisk": .array(own.map(queueJSON))]
                return .object(o)
            }
            entries += scan.problems.filter { directoryProblem == nil || $0.file != dir }
                .map { p in ["file": .string(p.file), "status": "refused", "reason": .string(p.reasonText)] }
            var document: JSONObject = ["directory": .string(dir), "directorySource": .string(choice.source.rawValue),
                                        "hostVersion": .string(HostVersion.string), "libraries": .array(entries)]
            document["secondClients"] = ["storageDirectory": .string(storage), "queues": .number(JSONNumber(clientQueues.count)),
                                         "bytes": .number(JSONNumber(clientQueues.reduce(0) { $0 + $1.bytes })),
                                         "queueCapBytes": .number(JSONNumber(SecondClientQueues.capBytes)),
                                         "totalCapBytes": .number(JSONNumber(SecondClientQueues.totalCapBytes)),
                                         "maxClients": .number(JSONNumber(SecondClientQueues.maxClients)),
                                         "onDisk": .array(clientQueues.map(queueJSON))]
            if let directoryProblem { document["error"] = .string(directoryProblem.reasonText) }
            print(JSON.object(document).serialized())
        } else if let directoryProblem {
            print("plugins in \(TerminalText.escaped(dir)): cannot be listed: \(TerminalText.escaped(directoryProblem.reasonText))")
            if choice.source != .option { print("(\(choice.origin); --plugins DIR lists another)") }
        } else {
            print("plugins in \(TerminalText.escaped(dir)): \(scan.libraries.count) loaded, \(scan.problems.count) refused")
            if choice.source != .option { print("(\(choice.origin); --plugins DIR lists another)") }
            // Keys, versions, toolchains and reasons come from the libraries: escaped (TerminalText).
            let e = TerminalText.escaped
            for i in scan.libraries {
                print("""

                    \(e(i.key))  \(e(i.version))
                      file       \(e(i.file))
                      ABI        \(i.abiVersion)
                      language   \(e(i.language))\(i.toolchain.map { " (\(e($0)))" } ?? "")
                      role       \(e(roleText(i)))
                      hooks      \(i.hooks.names.joined(separator: " "))
                      durable    \(durableText(i))
                      isolation  \(mode(i))\(mode(i) == IsolationMode.process.rawValue ? "\n  memory     " + isolation.memoryLimitSummary : "")
                    """)
                print(settingsText(i).map { "  " + e($0) }.joined(separator: "\n"))
                if mode(i) == IsolationMode.process.rawValue {
                    print("  allowed    \(e(allowed(i).summary))")
                    print("  user       \(isolation.runnerUser.summary)")
                    for line in JailMechanisms.summary { print("  jail       \(line)") }
                }
                let own = queues(of: i)
                if !own.isEmpty {
                    print("  second clients  \(queuesText(own)) on disk")
                    for q in own { print("    \(e(q.name))  \(queueText(q))") }
                }
            }
            for p in scan.problems {
                print("\nREFUSED  \(e(p.file))\n  reason   \(e(p.reasonText))")
            }
            let total = clientQueues.reduce(0) { $0 + $1.bytes }
            print("\nsecond clients in \(e(storage))/clients: \(clientQueues.isEmpty ? "no queues" : queuesText(clientQueues)) on disk "
                  + "(caps: \(SecondClientQueues.capBytes) bytes a queue, \(SecondClientQueues.totalCapBytes) all together, "
                  + "\(max(0, SecondClientQueues.totalCapBytes - total)) left; \(SecondClientQueues.maxClients) clients per host)")
            for q in clientQueues {
                let by = q.libraries.isEmpty ? "opened by a library not noted" : "opened by " + q.libraries.map(e).joined(separator: ", ")
                print("  \(e(q.name))  \(queueText(q)); \(by)")
            }
        }
        if directoryProblem != nil { return 2 }
        return scan.problems.isEmpty ? 0 : 1
    }

    /// The listing: through analytics-plugin-runner when it is found (each library in a process of
    /// its own, cached), else loaded in this process as before.
    struct Scan {
        var libraries: [NativeLibraryInfo]
        var problems: [PluginLoadError]

        init(directory: String, allowInsecure: Bool, user: RunnerUser) {
            if let runner = PluginRunnerLocator.find() {
                var scanner = IsolatedScanner(runner: runner, allowGroupOrOtherWritable: allowInsecure)
                scanner.user = user
                scanner.cacheFile = IsolatedScanner.defaultCacheFile()
                let result = scanner.scan(directory: directory)
                libraries = result.libraries
                problems = result.problems
            } else {
                let result = PluginLoader(configuration: .init(allowGroupOrOtherWritable: allowInsecure)).scan(directory: directory)
                libraries = result.libraries.map(\.info)
                problems = result.problems
            }
        }
    }

    /// The settings it declares (ABI 1.3 AH_EXT_SETTINGS_SCHEMA), one line each, like
    /// gst-inspect's properties: name, type, required or its default, what it does.
    static func settingsText(_ info: NativeLibraryInfo) -> [String] {
        guard let schema = info.settingsSchema else { return ["settings   not declared (check-settings cannot check them)"] }
        guard !schema.settings.isEmpty else { return ["settings   none (it reads no settings of its own)"] }
        let width = schema.settings.map(\.name.count).max() ?? 0
        let typeWidth = schema.settings.map(\.types.description.count).max() ?? 0
        return ["settings"] + schema.settings.map { d in
            let need = d.required ? "required" : d.defaultValue.map { "default \($0.serialized())" } ?? "optional"
            return "  " + d.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                + d.types.description.padding(toLength: typeWidth, withPad: " ", startingAt: 0) + "  \(need): \(d.summary)"
        }
    }

    /// "2 queues, 81920 bytes, 5 events" (events when every queue's count is known).
    static func queuesText(_ queues: [SecondClientQueues.Queue]) -> String {
        "\(queues.count) \(queues.count == 1 ? "queue" : "queues"), \(queues.reduce(0) { $0 + $1.bytes }) bytes"
            + (knownEvents(queues).map { ", \($0) events" } ?? "")
    }

    /// One queue: its bytes and the events its host left in it, when known.
    static func queueText(_ q: SecondClientQueues.Queue) -> String {
        "\(q.bytes) bytes, " + (q.events.map { "\($0) events when its host stopped" } ?? "events not counted (its host did not stop it)")
    }

    /// The events of all these queues, nil when one's count is not known.
    static func knownEvents(_ queues: [SecondClientQueues.Queue]) -> Int? {
        queues.reduce(Optional(0)) { sum, q in sum.flatMap { s in q.events.map { s + $0 } } }
    }

    static func queueJSON(_ q: SecondClientQueues.Queue) -> JSON {
        .object(["directory": .string(q.directory), "bytes": .number(JSONNumber(q.bytes)),
                 "events": q.events.map { .number(JSONNumber($0)) } ?? .null, "libraries": .array(q.libraries.map(JSON.string))])
    }

    /// Whether its events wait on disk until answered (ABI 1.3 AH_EXT_DURABLE), in one line.
    static func durableText(_ info: NativeLibraryInfo) -> String {
        guard let durable = info.durable else { return "no (events in memory; \"durable\": true in its settings asks for the queue)" }
        let cap = durable.maxDiskBytes.map { "\($0) bytes" } ?? "the host's default"
        return "yes: events wait on disk (storage/destinations/\(info.key)) until answered, cap \(cap)"
    }

    /// What the role means for a user, in one line.
    static func roleText(_ info: NativeLibraryInfo) -> String {
        switch (info.isDestination, info.wantsWholeSettings) {
        case (true, false): return "destination (created when the settings' integrations name \"\(info.key)\")"
        case (true, true): return "destination, whole settings (created at start-up unless integrations[\"\(info.key)\"] is false)"
        case (false, _): return "timeline plugins, whole settings (not a destination; created at start-up unless integrations[\"\(info.key)\"] is false)"
        }
    }
}
