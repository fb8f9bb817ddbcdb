import Foundation

/// Second clients (`AH_EXT_CLIENTS`): what analytics-swift-live's `new Analytics(writeKey)` makes
/// for another write key. Each is a whole client of its own: its events go to Segment.io under
/// that key, through its own durable queue (`<storage>/clients/<key>`), with its own user. It
/// shares the host's upload host, retry policy, flush policy, storage mode and handlers, and
/// nothing else: no other destination, middleware, library, signals or lifecycle events (the
/// references' second client has no device-mode destination either). One per write key, kept
/// until the host stops; the host stops them after its libraries stopped.
///
/// Their disk is bounded: every second client's queue together holds at most
/// `totalQueueBytes` (each gets its share, `queueBytes`, and a client is not opened while the
/// queues on disk, earlier runs' included, leave no room for its share), and a queue left empty
/// when the host stops is removed (a library that opens clients for new keys on every run does
/// not grow the disk run after run).
///
/// Threads: every method is [any thread]; none calls into a library.
final class SecondClients: Sendable {
    /// At most this many second clients per host (each holds a queue and threads).
    static let limit = 16
    /// Every second client's queue together, on disk, and each one's share.
    static let totalQueueBytes = 64 << 20
    static let queueBytes = totalQueueBytes / limit
    private let state = Locked(State())
    private struct State {
        var clients: [Analytics] = []
        var stopped = false
    }

    enum OpenError: Error {
        /// Bad key or too many clients.
        case refused(String)
        /// Stopping, or the client's storage cannot be opened.
        case unavailable(String)
    }

    /// The id (1-based) of the client for `writeKey`, made on first use from the host's
    /// `configuration` and Segment.io settings.
    func open(writeKey: String, library: String? = nil, host: Configuration, segmentSettings: JSONObject) throws(OpenError) -> UInt64 {
        if writeKey.isEmpty { throw .refused("the write key is empty") }
        if writeKey.utf8.count > 256 { throw .refused("the write key is \(writeKey.utf8.count) bytes, over 256") }
        if writeKey == host.writeKey { throw .refused("\"\(writeKey)\" is this host's own write key (use its client)") }
        return try state.withLock { s throws(OpenError) -> UInt64 in
            if s.stopped { throw .unavailable("the host is stopping") }
            if let i = s.clients.firstIndex(where: { $0.configuration.writeKey == writeKey }) {
                if let library { SecondClientQueues.record(library: library, in: s.clients[i].configuration.storageDirectory) }
                return UInt64(i + 1)
            }
            if s.clients.count >= SecondClients.limit {
                throw .refused("this host allows \(SecondClients.limit) second clients, all in use")
            }
            let own = host.storageDirectory + "/clients/" + SecondClients.directoryName(for: writeKey)
            let others = SecondClientQueues.onDisk(in: host.storageDirectory).filter { $0.directory != own }.reduce(0) { $0 + $1.bytes }
            if others + SecondClients.queueBytes > SecondClients.totalQueueBytes {
                throw .unavailable("second clients' queues hold \(others) bytes on disk (\(host.storageDirectory)/clients), "
                    + "no room for another's \(SecondClients.queueBytes) within \(SecondClients.totalQueueBytes)")
            }
            let client = Analytics(configuration: SecondClients.configuration(writeKey: writeKey, host: host, segmentSettings: segmentSettings))
            if let error = client.storageError {
                client.shutdown()
                throw .unavailable("\(error)")
            }
            // Its count from the last stop no longer holds once it runs again.
            try? FileManager.default.removeItem(atPath: own + "/" + SecondClientQueues.eventsFile)
            if let library { SecondClientQueues.record(library: library, in: own) }
            s.clients.append(client)
            return UInt64(s.clients.count)
        }
    }

    /// The client with this id, nil for an unknown one.
    func client(_ id: UInt64) -> Analytics? {
        state.withLock { s in id >= 1 && id <= UInt64(s.clients.count) ? s.clients[Int(id - 1)] : nil }
    }

    /// Flushes and stops every second client; later opens are refused.
    @discardableResult
    func shutdown() -> Bool {
        let clients = state.withLock { s -> [Analytics] in s.stopped = true; return s.clients }
        return clients.map { client in
            let segment = client.find(key: RoutingRules.segmentDestinationKey) as? SegmentDestination
            let stopped = client.shutdown()
            let directory = client.configuration.storageDirectory
            // Nothing left to upload: its queue goes (its user stays, for the next run).
            if stopped, let segment, segment.pendingEvents == 0 {
                try? FileManager.default.removeItem(atPath: directory + "/queue")
            } else if let segment {
                // What it left, for `analytics-host plugins` (which does not open the queue).
                SecondClientQueues.write(String(segment.pendingEvents) + "\n", to: directory + "/" + SecondClientQueues.eventsFile)
            }
            return stopped
        }.allSatisfy { $0 }
    }

    /// The host's configuration, narrowed to a Segment.io-only client for `writeKey`.
    static func configuration(writeKey: String, host: Configuration, segmentSettings: JSONObject) -> Configuration {
        var c = Configuration(writeKey: writeKey, storageDirectory: host.storageDirectory + "/clients/" + directoryName(for: writeKey))
        c.flushAt = host.flushAt
        c.flushInterval = host.flushInterval
        c.flushTimeout = host.flushTimeout
        c.hookTimeout = host.hookTimeout
        c.errorHandler = host.errorHandler
        c.logHandler = host.logHandler
        c.application = host.application
        c.identity = host.identity
        c.trackApplicationLifecycleEvents = false
        c.segment = host.segment
        c.maxQueueBytes = min(host.maxQueueBytes, queueBytes)
        c.destinationQueueCapacity = host.destinationQueueCapacity
        c.destinationOverflow = host.destinationOverflow
        c.storageMode = host.storageMode
        c.operatingMode = host.operatingMode
        c.allowInsecurePluginPermissions = host.allowInsecurePluginPermissions
        var segment = segmentSettings
        segment["apiKey"] = .string(writeKey)
        c.defaultSettings = Settings(["integrations": ["Segment.io": .object(segment)]])
        c.settingsLocation = .defaultsOnly
        c.autoAddSegmentDestination = true
        return c
    }

    /// A directory name for a write key: its safe characters, then a hash of the whole key (so
    /// two keys never share a queue).
    static func directoryName(for writeKey: String) -> String {
        let safe = String(writeKey.unicodeScalars.prefix(48).map { c -> Character in
            c.isASCII && (CharacterSet.alphanumerics.contains(c) || c == "-" || c == "_") ? Character(c) : "_"
        })
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in writeKey.utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        return safe + "-" + String(hash, radix: 16)
    }
}

extension Analytics {
    /// Opens (or finds) the second client for `writeKey` (see ``SecondClients``); `library`: the
    /// key of the library that asks, noted beside the client's queue.
    func openSecondClient(writeKey: String, library: String? = nil) throws(SecondClients.OpenError) -> UInt64 {
        let segment = settings.json["integrations"]?["Segment.io"]?.objectValue ?? [:]
        return try secondClients.open(writeKey: writeKey, library: library, host: configuration, segmentSettings: segment)
    }
}

/// The second clients' queues as they are on disk (`<storage>/clients/<name>/queue`), read
/// without opening them (so while a host runs too): what the bounds count and what
/// `analytics-host plugins` shows. Beside each queue the host notes the libraries that opened
/// the client (`libraries`, one key a line) and, when it stopped with events left, how many
/// (`events`; removed when the client opens again, so a count is never one a later run changed).
package enum SecondClientQueues {
    /// Every second client's queue together, on disk; each one's share; most clients per host.
    package static let totalCapBytes = SecondClients.totalQueueBytes
    package static let capBytes = SecondClients.queueBytes
    package static let maxClients = SecondClients.limit
    static let librariesFile = "libraries"
    static let eventsFile = "events"

    package struct Queue: Sendable, Equatable {
        /// The client's directory (`<storage>/clients/<name>`; its queue is `queue` beneath).
        package var directory: String
        /// Blocks the queue's files take on disk, in bytes (what the caps count).
        package var bytes: Int
        /// Keys of the libraries that opened the client (empty when none was noted).
        package var libraries: [String]
        /// Events it held when a host last stopped it, nil when not known (it ran since, or
        /// its host did not stop).
        package var events: Int?
        /// The client's directory name (its write key's safe characters and a hash).
        package var name: String { String(directory.split(separator: "/").last ?? "") }
    }

    /// The queues under a storage directory, by directory name.
    package static func onDisk(in storageDirectory: String) -> [Queue] {
        let root = storageDirectory + "/clients"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return [] }
        return names.sorted().compactMap { name in
            let directory = root + "/" + name
            let queue = directory + "/queue"
            guard let files = try? FileManager.default.contentsOfDirectory(atPath: queue) else { return nil }
            var bytes = 0
            for file in files {
                var st = stat()
                if lstat(queue + "/" + file, &st) == 0 { bytes += Int(st.st_blocks) * 512 }
            }
            return Queue(directory: directory, bytes: bytes, libraries: libraries(in: directory),
                         events: small(directory + "/" + eventsFile).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        }
    }

    /// The keys noted in a client's directory.
    static func libraries(in directory: String) -> [String] {
        (small(directory + "/" + librariesFile) ?? "").split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    /// Notes `library` as one that opened the client in `directory` (once).
    static func record(library: String, in directory: String) {
        let known = libraries(in: directory)
        guard !known.contains(library) else { return }
        write((known + [library]).joined(separator: "\n") + "\n", to: directory + "/" + librariesFile)
    }

    /// A small file's text (at most 64 KiB read), nil when it cannot be read.
    static func small(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 64 << 10) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Replaces a small file (written beside, then renamed; nothing on failure).
    static func write(_ text: String, to path: String) {
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }
}
