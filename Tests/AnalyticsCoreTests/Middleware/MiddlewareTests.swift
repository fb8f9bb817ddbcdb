import Foundation
import Testing
@testable import AnalyticsCore

/// The examples of Segment's "Middleware for iOS", on this client.
enum SeedMiddleware {
    static let customizeAllTrackCalls = BlockMiddleware { context, next in
        guard case .event(.track) = context.eventType, let payload = context.payload else { return next(context) }
        next(context.modify { ctx in
            var props = payload.properties
            props["customAttribute"] = "Hello"
            ctx.payload?.event = "[New] " + (payload.event ?? "")
            ctx.payload?.properties = props
        })
    }

    static let turnScreenIntoTrack = BlockMiddleware { context, next in
        guard case .event(.screen) = context.eventType, let payload = context.payload else { return next(context) }
        next(context.modify { ctx in
            ctx.payload?.type = .track
            ctx.payload?.event = "\(payload.name ?? "") Screen Tracked"
            ctx.payload?.payload.removeValue(forKey: "name")
        })
    }

    static let dropSpecificEvents = BlockMiddleware { context, next in
        let valid: Set = ["Application Opened", "Order Completed", "Home Screen Tracked"]
        if case .event(.track) = context.eventType, let name = context.payload?.event, !valid.contains(name) { return }
        next(context)
    }

    static let blockScreenCallsToAmplitude = BlockMiddleware { context, next in
        if case .event(.screen) = context.eventType { return }
        next(context)
    }

    static func sampleEventsToMixpanel(keepFraction: Double, random: @escaping @Sendable () -> Double) -> Middleware {
        BlockMiddleware { context, next in
            if case .event(.track) = context.eventType, random() >= keepFraction { return }
            next(context)
        }
    }

    static let customizeAmplitudeTrackCalls = BlockMiddleware { context, next in
        guard case .event(.track) = context.eventType, let payload = context.payload else { return next(context) }
        next(context.modify { ctx in ctx.payload?.event = "[Amplitude] " + (payload.event ?? "") })
    }
}

/// A deterministic random source for sampling tests.
final class SequenceRandom: Sendable {
    private let values: Locked<[Double]>
    init(_ values: [Double]) { self.values = Locked(values) }
    var next: @Sendable () -> Double { { [self] in values.withLock { $0.isEmpty ? 0 : $0.removeFirst() } } }
}

@Suite struct MiddlewareTests {
    @Test func customizeAllTrackCalls() {
        let (analytics, _) = makeClient(["D"]) { $0.sourceMiddleware = [SeedMiddleware.customizeAllTrackCalls] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.track("Order Completed", properties: ["total": 3])
        analytics.identify(userId: "u1")
        #expect(analytics.flush())
        #expect(d.events[0].event == "[New] Order Completed")
        #expect(d.events[0].properties == ["total": 3, "customAttribute": "Hello"])
        #expect(d.events[1].type == .identify)
    }

    @Test func turnScreenIntoTrack() {
        let (analytics, _) = makeClient(["D"]) { $0.sourceMiddleware = [SeedMiddleware.turnScreenIntoTrack] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.screen("Home", properties: ["a": 1])
        #expect(analytics.flush())
        let e = d.events[0]
        #expect(e.type == .track)
        #expect(e.payload["type"] == "track")
        #expect(e.event == "Home Screen Tracked")
        #expect(e.properties == ["a": 1])
    }

    @Test func dropSpecificEvents() {
        let (analytics, _) = makeClient(["D"]) { $0.sourceMiddleware = [SeedMiddleware.dropSpecificEvents] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        for name in ["Order Completed", "Debug Ping", "Application Opened", "Noise"] { analytics.track(name) }
        #expect(analytics.flush())
        #expect(d.names == ["Order Completed", "Application Opened"])
    }

    @Test func blockScreenCallsToAmplitudeOnly() {
        let (analytics, _) = makeClient(["Amplitude", "Mixpanel"]) {
            $0.destinationMiddleware = ["Amplitude": [SeedMiddleware.blockScreenCallsToAmplitude]]
        }
        let amp = RecordingDestination("Amplitude")
        let mix = RecordingDestination("Mixpanel")
        analytics.add(plugin: amp)
        analytics.add(plugin: mix)
        analytics.screen("Home")
        analytics.track("Clicked")
        #expect(analytics.flush())
        #expect(amp.names == ["Clicked"], "dropped for Amplitude only (analytics-ios gets this wrong)")
        #expect(mix.names == ["Home", "Clicked"])
        #expect(analytics.timeline.stats(forKey: "Amplitude")?.dropped == 1)
    }

    @Test func sampleEventsToMixpanelWithInjectedRandomness() {
        let random = SequenceRandom([0.1, 0.9, 0.3, 0.5, 0.39, 0.41])
        let (analytics, _) = makeClient(["Mixpanel", "Other"]) {
            $0.destinationMiddleware = ["Mixpanel": [SeedMiddleware.sampleEventsToMixpanel(keepFraction: 0.4, random: random.next)]]
        }
        let mix = RecordingDestination("Mixpanel")
        let other = RecordingDestination("Other")
        analytics.add(plugin: mix)
        analytics.add(plugin: other)
        for i in 0..<6 { analytics.track("E\(i)") }
        #expect(analytics.flush())
        #expect(mix.names == ["E0", "E2", "E4"])
        #expect(other.names.count == 6)
    }

    @Test func customizeAmplitudeTrackCallsLeavesOthersAlone() {
        let (analytics, _) = makeClient(["Amplitude", "Mixpanel"]) {
            $0.destinationMiddleware = ["Amplitude": [SeedMiddleware.customizeAmplitudeTrackCalls]]
        }
        let amp = RecordingDestination("Amplitude")
        let mix = RecordingDestination("Mixpanel")
        analytics.add(plugin: amp)
        analytics.add(plugin: mix)
        analytics.track("Signed Up")
        #expect(analytics.flush())
        #expect(amp.names == ["[Amplitude] Signed Up"])
        #expect(mix.names == ["Signed Up"])
    }

    @Test func chainRunsInOrderAndSeesEarlierChanges() {
        let first = BlockMiddleware { ctx, next in next(ctx.modify { $0.payload?.event = "one" }) }
        let second = BlockMiddleware { ctx, next in next(ctx.modify { c in let name = c.payload?.event ?? ""; c.payload?.event = name + "+two" }) }
        let (analytics, _) = makeClient(["D"]) { $0.sourceMiddleware = [first, second] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.track("x")
        #expect(analytics.flush())
        #expect(d.names == ["one+two"])
    }

    @Test func contextCarriesIdentityAndChangesToItLand() {
        let seen = Locked<[String?]>([])
        let mw = BlockMiddleware { ctx, next in
            seen.withLock { $0.append(ctx.userId) }
            next(ctx.modify { $0.userId = "rewritten" })
        }
        let (analytics, _) = makeClient(["D"]) { $0.sourceMiddleware = [mw] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.identify(userId: "alice")
        #expect(analytics.flush())
        #expect(seen.withLock { $0 }.first == "alice")
        #expect(d.events.first?.userId == "rewritten")
    }

    @Test func resetAndFlushPassThroughMiddleware() {
        let calls = Locked<[MiddlewareContext.Call]>([])
        let blockReset = BlockMiddleware { ctx, next in
            calls.withLock { $0.append(ctx.eventType) }
            if ctx.eventType == .reset { return }
            next(ctx)
        }
        let (analytics, _) = makeClient(["A", "B"]) { $0.destinationMiddleware = ["A": [blockReset]] }
        let a = RecordingDestination("A")
        let b = RecordingDestination("B")
        analytics.add(plugin: a)
        analytics.add(plugin: b)
        analytics.reset()
        #expect(analytics.flush())
        #expect(a.recorded.resets == 0, "A's middleware swallowed the reset")
        #expect(b.recorded.resets == 1)
        #expect(a.recorded.flushes == 1)
        #expect(calls.withLock { $0 } == [.reset, .flush])

        // Source middleware that swallows reset keeps the identity.
        let (client2, _) = makeClient(["A"]) { $0.sourceMiddleware = [blockReset] }
        let before = client2.anonymousId
        client2.reset()
        #expect(client2.anonymousId == before)
    }
}
