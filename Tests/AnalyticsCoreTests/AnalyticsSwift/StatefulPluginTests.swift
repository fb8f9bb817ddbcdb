import Foundation
import Testing
import AnalyticsCore

/// Plugins with state in Swift 6 without `@unchecked Sendable` or a lock of their own: a plain
/// class with `var`s (`SerialPlugin`, wrapped by `Serialized`) and `PluginState` boxes. Counts
/// must be exact when many threads call at once.
@Suite struct StatefulPluginTests {
    /// A source (before) plugin: it runs on every caller's thread, so calls really do overlap.
    final class TrackCounter: SerialPlugin {
        let type = PluginType.before
        var tracks = 0
        var perName: [String: Int] = [:]
        weak var analytics: Analytics?

        func configure(analytics: Analytics) { self.analytics = analytics }

        func track(_ event: TrackEvent) -> TrackEvent? {
            tracks += 1
            perName[event.event, default: 0] += 1
            // Re-entering the client from a hook (the lock is recursive): "Ping" sends "Pong".
            if event.event == "Ping" { analytics?.track(name: "Pong") }
            return event
        }
    }

    final class CountingDestination: SerialDestinationPlugin {
        let key = "Counter"
        var received = 0
        var flushes = 0
        var resets = 0
        func track(_ event: TrackEvent) -> TrackEvent? { received += 1; return event }
        func flush() { flushes += 1 }
        func reset() { resets += 1 }
    }

    /// The other pattern: the `Sendable` protocol kept, state in a `let` box.
    final class BoxCounter: EventPlugin {
        let type = PluginType.enrichment
        let seen = PluginState(0)
        let names = PluginState<Set<String>>([])
        func track(_ event: TrackEvent) -> TrackEvent? {
            seen.value += 1
            names.withLock { _ = $0.insert(event.event) }
            return event
        }
    }

    func client() -> Analytics {
        var configuration = Configuration(writeKey: "stateful")
            .storageMode(.memory(10))
            .settingsLocation(.defaultsOnly)
            .defaultSettings(Settings(["integrations": ["Counter": [:]]]))
            .autoAddSegmentDestination(false)
            .trackApplicationLifecycleEvents(false)
        // Every event must reach the destination, however far its worker lags behind the callers.
        configuration.destinationOverflow = .wait(seconds: .infinity)
        return Analytics(configuration: configuration)
    }

    @Test func plainClassPluginsCountExactlyUnderConcurrentCalls() {
        let analytics = client()
        let counter = analytics.add(plugin: TrackCounter())
        let destination = analytics.add(plugin: CountingDestination())
        let box = BoxCounter()
        analytics.add(plugin: box)
        let threads = 8, perThread = 2_000
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread { analytics.track(name: "E\((t + i) % 4)") }
        }
        analytics.track(name: "Ping")
        #expect(analytics.flush())
        let total = threads * perThread
        #expect(counter.withPlugin { $0.tracks } == total + 2)  // + Ping and the Pong it sent
        #expect(counter.withPlugin { $0.perName } == ["E0": total / 4, "E1": total / 4, "E2": total / 4, "E3": total / 4, "Ping": 1, "Pong": 1])
        #expect(box.seen.value == total + 2)
        #expect(box.names.value == ["E0", "E1", "E2", "E3", "Ping", "Pong"])
        #expect(destination.withPlugin { $0.received } == total + 2)
        #expect(destination.withPlugin { $0.flushes } == 1)
        analytics.reset()
        #expect(analytics.flush())
        #expect(destination.withPlugin { ($0.resets, $0.flushes) } == (1, 2))
        #expect(analytics.timeline.stats(forKey: "Counter")?.delivered == total + 2)
        #expect(analytics.find(pluginType: Serialized<CountingDestination>.self) === destination)
        #expect(analytics.shutdown())
    }

    @Test func pluginStateModifyIsOneAtomicStep() {
        let state = PluginState(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { state.value += 1 }
        }
        #expect(state.value == 80_000)
    }
}
