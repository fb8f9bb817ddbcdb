import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

@Suite struct SignalsHubTests {
    @Test func emitStampsTheCommonFieldsFromTheClient() throws {
        let (analytics, errors) = makeClient { $0.signals = quietSignals(); $0.application = ApplicationInfo(name: "Shop", version: "2.0", build: "7") }
        let signals = try #require(analytics.signals)
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        signals.emit(NavigationSignal(action: .entering, screen: "ProductDetail"))
        #expect(signals.flush(timeout: 5))
        let s = try #require(recorder.signals.first)
        #expect(s.keys == ["anonymousId", "type", "timestamp", "index", "context", "data"])
        #expect(s["anonymousId"]?.stringValue == analytics.anonymousId)
        #expect(s["type"] == "navigation" && s["index"] == 0)
        let ts = try #require(s["timestamp"]?.stringValue)
        #expect(ts.count == 24 && ts.hasSuffix("Z"))
        #expect(s["context"]?["app"] == ["name": "Shop", "version": "2.0", "build": "7"])
        #expect(s["context"]?["library"]?["name"] == "analytics-host")
        #expect(s["data"] == ["action": "entering", "screen": "ProductDetail", "currentScreen": "ProductDetail"])
        #expect(errors.all.isEmpty)
        analytics.shutdown()
    }

    @Test func indexesAreSequentialAndDeliveredInOrderFromManyThreads() throws {
        let signals = Signals(configuration: quietSignals())
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<500 { signals.emit(userDefined: ["thread": .number(Double(t)), "i": .number(Double(i))]) }
        }
        #expect(signals.flush(timeout: 10))
        #expect(recorder.indexes == Array(0..<2000))
        // Each thread's own signals keep their order.
        for t in 0..<4 {
            let mine = recorder.signals.filter { $0["data"]?["thread"]?.intValue == t }.compactMap { $0["data"]?["i"]?.intValue }
            #expect(mine == Array(0..<500))
        }
        signals.shutdown()
    }

    @Test func signalsBeforeTheFirstSubscriberAreReplayedInOrderOnceReady() throws {
        let signals = Signals(configuration: quietSignals())
        for i in 0..<5 { signals.emit(userDefined: ["early": .number(Double(i))]) }
        let recorder = SignalRecorder()
        let id = try #require(signals.subscribe(name: "runtime", ready: false, recorder.deliver))
        signals.emit(userDefined: ["late": 1])
        #expect(signals.flush(timeout: 5))
        #expect(recorder.signals.isEmpty)  // not ready: held
        signals.setReady(id, true)
        signals.emit(userDefined: ["live": 1])
        #expect(signals.flush(timeout: 5))
        #expect(recorder.indexes == [0, 1, 2, 3, 4, 5, 6])
        #expect(signals.stats.shedBeforeReady == 0)
        // Not ready again (a new bundle loading): held, then replayed.
        signals.setReady(id, false)
        signals.emit(userDefined: ["reload": 1])
        #expect(signals.flush(timeout: 5))
        #expect(recorder.indexes.count == 7)
        signals.setReady(id, true)
        #expect(signals.flush(timeout: 5))
        #expect(recorder.indexes == Array(0...7))
        signals.shutdown()
    }

    @Test func earlySignalsAreBoundedAndTheShedOnesCountedAndReported() throws {
        let errors = ErrorLog()
        let signals = Signals(configuration: quietSignals { $0.maximumBufferSize = 3 }, report: errors.handler)
        for i in 0..<10 { signals.emit(userDefined: ["i": .number(Double(i))]) }
        let recorder = SignalRecorder()
        let id = try #require(signals.subscribe(name: "LivePlugins", ready: false, recorder.deliver))
        #expect(signals.flush(timeout: 5))
        #expect(signals.stats.shedBeforeReady == 7)
        signals.setReady(id, true)
        #expect(signals.flush(timeout: 5))
        #expect(recorder.indexes == [7, 8, 9])
        #expect(errors.messages.contains { $0.contains("7 signals emitted before LivePlugins was ready were shed") })
        signals.shutdown()
    }

    @Test func aFullDispatchQueueShedsTheOldestAndCountsThem() throws {
        let signals = Signals(configuration: quietSignals { $0.dispatchQueueCapacity = 5 })
        let gate = Gate()
        let recorder = SignalRecorder()
        signals.subscribe(name: "slow") { bytes, signal in
            if signal.index == 0 { gate.pass() }
            recorder.deliver(bytes, signal)
        }
        signals.emit(userDefined: [:])
        #expect(gate.waitForArrival())  // the signals thread is now held inside the subscriber
        for _ in 1..<20 { signals.emit(userDefined: [:]) }
        gate.release()
        #expect(signals.flush(timeout: 5))
        let stats = signals.stats
        #expect(stats.emitted == 20)
        #expect(stats.shedQueueFull == 14)
        #expect(stats.dispatched == 6)
        #expect(recorder.indexes == [0, 15, 16, 17, 18, 19])
        signals.shutdown()
    }

    @Test func theWaitPolicyHoldsTheEmitterInsteadOfShedding() throws {
        let signals = Signals(configuration: quietSignals { $0.dispatchQueueCapacity = 5; $0.overflow = .wait(seconds: 30) })
        let gate = Gate()
        let recorder = SignalRecorder()
        signals.subscribe(name: "slow") { bytes, signal in
            if signal.index == 0 { gate.pass() }
            recorder.deliver(bytes, signal)
        }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for _ in 0..<50 { signals.emit(userDefined: [:]) }
            done.signal()
        }
        #expect(gate.waitForArrival())
        gate.release()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(signals.flush(timeout: 5))
        #expect(signals.stats.shedQueueFull == 0)
        #expect(recorder.indexes == Array(0..<50))
        signals.shutdown()
    }

    @Test func everyEventBecomesAnInstrumentationSignal() throws {
        let (analytics, _) = makeClient(["D"]) { $0.signals = quietSignals() }
        let signals = try #require(analytics.signals)
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        analytics.track("Viewed", properties: ["n": 1])
        analytics.screen("Home")
        analytics.identify(userId: "u1")
        #expect(signals.flush(timeout: 5))
        let kinds = recorder.signals.map { $0["data"]?["type"]?.stringValue ?? "" }
        #expect(recorder.signals.allSatisfy { $0["type"] == "instrumentation" })
        #expect(kinds == ["track", "screen", "identify"])
        #expect(recorder.signals[0]["data"]?["rawEvent"]?["event"] == "Viewed")
        #expect(recorder.signals[0]["data"]?["rawEvent"]?["properties"]?["n"] == 1)
        #expect(recorder.signals[0]["data"]?["rawEvent"]?["context"]?["library"]?["name"] == "analytics-host")
        #expect(signals.stats.instrumented == 3)
        analytics.shutdown()
    }

    /// Events made from signals carry exactly what ``SignalsOrigin.stamp`` writes, and the
    /// client skips exactly those; events from other origins (e.g. "js") are still instrumented.
    @Test func eventsMadeFromSignalsDoNotLoopBack() throws {
        let (analytics, _) = makeClient(["D"]) { $0.signals = quietSignals() }
        let destination = RecordingDestination("D")
        analytics.add(plugin: destination)
        let signals = try #require(analytics.signals)
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)

        var fromSignal: JSONObject = ["type": "track", "event": "Add To Cart", "properties": [:]]
        SignalsOrigin.stamp(&fromSignal)
        #expect(fromSignal["context"]?["__eventOrigin"] == ["type": "signals"])
        try analytics.process(payload: fromSignal)
        try analytics.process(payload: ["type": "track", "event": "From JS", "context": ["__eventOrigin": ["type": "js", "version": 3]]])
        #expect(analytics.flush())
        #expect(signals.flush(timeout: 5))
        #expect(destination.names == ["Add To Cart", "From JS"])  // both delivered
        #expect(recorder.signals.count == 1)
        #expect(recorder.signals.first?["data"]?["rawEvent"]?["event"] == "From JS")
        #expect(signals.stats.loopGuarded == 1)
        analytics.shutdown()
    }

    @Test func emittingAfterShutdownIsRefused() {
        let signals = Signals(configuration: quietSignals())
        signals.shutdown()
        #expect(signals.emit(userDefined: [:]) == nil)
        #expect(signals.subscribe(name: "late") { _, _ in } == nil)
    }

    @Test func userDefinedSignalsFromEncodableValues() throws {
        struct MyKindaData: Encodable { let that: String }
        let signals = Signals(configuration: quietSignals())
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        try signals.emit(encoding: MyKindaData(that: "Robbie Ray Rana"))
        #expect(throws: SignalError.self) { try signals.emit(encoding: [1, 2]) }
        #expect(signals.flush(timeout: 5))
        #expect(recorder.signals.map { $0["data"] } == [["that": "Robbie Ray Rana"]])
        #expect(recorder.signals.first?["type"] == "userDefined")
        signals.shutdown()
    }
}
