import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// SIGKILL rounds against a durable library destination: `segment-crash-child` (no Segment.io)
/// loads the library from `plugins` under `key` with `settings`, calls `track("Crash Test",
/// properties: ["index": i])` in a loop and reports each returned call on a pipe; each round it
/// is killed once the vendor has received uploads from it and at least a random number of calls
/// returned, on the same storage. What the rounds accepted is then delivered by a restart
/// (`restart`), and the caller checks what reached the vendor.
struct DurableCrashRounds {
    struct Round {
        let first: Int
        var accepted = 0
        /// The vendor's request count when the round started and when its child was killed.
        var requestsBefore = 0
        var requestsAtKill = 0
        var acceptedIndices: Range<Int> { first..<(first + accepted) }
    }

    let plugins: String
    let key: String
    let settings: JSONObject
    let storage: String
    /// How many requests the vendor has received so far, and how many connections are open.
    let requestCount: () -> Int
    let openConnections: () -> Int

    static let perRound = 1_000_000

    func run(kills: Int) throws -> (rounds: [Round], childErrors: [String]) {
        var rounds: [Round] = []
        var childErrors: [String] = []
        for number in 0..<kills {
            var round = Round(first: number * Self.perRound)
            round.requestsBefore = requestCount()
            let child = try SegmentCrashChildProcess(storage: storage, apiHost: "-", first: round.first, count: Self.perRound,
                                                     flushAt: 20, plugins: (plugins, key), settings: settings)
            let killAt = Int.random(in: 200...1_500)
            try child.readUntil(timeout: 120) { line in
                guard line.hasPrefix("a "), let n = Int(line.dropFirst(2)) else { return false }
                return n >= killAt && requestCount() > round.requestsBefore
            }
            child.killAndReap()
            // Uploads the child had sent are still in the vendor's sockets: counted once it has
            // read them all (its connections to the dead child end).
            #expect(eventually(timeout: 30) { openConnections() == 0 }, "the vendor read what the killed child sent")
            round.requestsAtKill = requestCount()
            round.accepted = child.accepted
            childErrors += child.errors
            rounds.append(round)
        }
        return (rounds, childErrors)
    }

    /// A client in this process on the same storage, with the same library and settings, kept
    /// flushing until its durable queue is empty (at most `timeout` seconds).
    func restart(timeout: Double = 180, configure: (inout Configuration) -> Void = { _ in }) throws -> (queued: Int, delivered: Int, errors: [String]) {
        let errors = ErrorLog()
        var config = Configuration(writeKey: "crash-key", storageDirectory: storage)
        config.trackApplicationLifecycleEvents = false
        config.autoAddSegmentDestination = false
        config.pluginsDirectory = plugins
        config.defaultSettings = Settings(["integrations": [key: .object(settings)]])
        config.settingsLocation = .defaultsOnly
        config.errorHandler = errors.handler
        configure(&config)
        let analytics = try Analytics.start(configuration: config)
        let stats = try #require(analytics.timeline.stats(forKey: key))
        let deadline = monotonicSeconds() + timeout
        while stats.queued > 0 && monotonicSeconds() < deadline { _ = analytics.flush() }
        let queued = stats.queued
        analytics.shutdown()
        return (queued, stats.delivered, errors.messages)
    }

    /// Every accepted index, per round.
    static func accepted(_ rounds: [Round]) -> Set<Int> {
        rounds.reduce(into: Set<Int>()) { $0.formUnion($1.acceptedIndices) }
    }

    /// Indices no round's child sent.
    static func foreign(_ indices: some Sequence<Int>, _ rounds: [Round]) -> [Int] {
        indices.filter { i in !rounds.contains { ($0.first..<($0.first + perRound)).contains(i) } }
    }
}
