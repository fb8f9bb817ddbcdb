import Foundation

/// Second clients (`AH_EXT_CLIENTS`): what analytics-swift-live's `new Analytics(writeKey)` makes
/// for another write key. Each is a whole client of its own: its events go to Segment.io under
/// that key, through its own durable queue (`<storage>/clients/<key>`), with its own user. It
/// shares the host's upload host, retry policy, flush policy, storage mode and handlers, and
/// nothing else: no other destination, middleware, library, signals or lifecycle events (the
/// references' second client has no device-mode destination either). One per write key, kept
/// until the host stops; the host stops them after its libraries stopped.
///
/// Threads: every method is [any thread]; none calls into a library.
final class SecondClients: Sendable {
    /// At most this many second clients per host (each holds a queue and threads).
    static let limit = 16
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
    func open(writeKey: String, host: Configuration, segmentSettings: JSONObject) throws(OpenError) -> UInt64 {
        if writeKey.isEmpty { throw .refused("the write key is empty") }
        if writeKey.utf8.count > 256 { throw .refused("the write key is \(writeKey.utf8.count) bytes, over 256") }
        if writeKey == host.writeKey { throw .refused("\"\(writeKey)\" is this host's own write key (use its client)") }
        return try state.withLock { s throws(OpenError) -> UInt64 in
            if s.stopped { throw .unavailable("the host is stopping") }
            if let i = s.clients.firstIndex(where: { $0.configuration.writeKey == writeKey }) { return UInt64(i + 1) }
            if s.clients.count >= SecondClients.limit {
                throw .refused("this host allows \(SecondClients.limit) second clients, all in use")
            }
            let client = Analytics(configuration: SecondClients.configuration(writeKey: writeKey, host: host, segmentSettings: segmentSettings))
            if let error = client.storageError {
                client.shutdown()
                throw .unavailable("\(error)")
            }
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
        return clients.map { $0.shutdown() }.allSatisfy { $0 }
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
        c.maxQueueBytes = host.maxQueueBytes
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
    /// Opens (or finds) the second client for `writeKey` (see ``SecondClients``).
    func openSecondClient(writeKey: String) throws(SecondClients.OpenError) -> UInt64 {
        let segment = settings.json["integrations"]?["Segment.io"]?.objectValue ?? [:]
        return try secondClients.open(writeKey: writeKey, host: configuration, segmentSettings: segment)
    }
}
