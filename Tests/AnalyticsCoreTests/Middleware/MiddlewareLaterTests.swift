import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The `next` of middleware that said `later()`, kept by event name until a test answers it.
final class HeldNexts: Sendable {
    private let held = Locked<[String: MiddlewareNext]>([:])
    private let arrived = NSCondition()

    /// A middleware that answers at once for names not in `deferring`, and later for the others.
    func middleware(deferring: Set<String>) -> Middleware {
        BlockMiddleware { [self] context, next in
            guard let name = context.payload?.event, deferring.contains(name) else { return next(context) }
            next.later()
            held.withLock { $0[name] = next }
            arrived.lock(); arrived.broadcast(); arrived.unlock()
        }
    }

    /// Waits (bounded) until the middleware holds `name`'s next.
    func next(_ name: String, timeout: Double = 10) -> MiddlewareNext? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        arrived.lock()
        defer { arrived.unlock() }
        while true {
            if let next = held.withLock({ $0[name] }) { return next }
            if !arrived.wait(until: deadline) { return nil }
        }
    }

    /// Answers `name` on a thread of its own, with the context tagged by `tag`.
    func answer(_ name: String, tag: String) {
        guard let next = next(name) else { return }
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            next(MiddlewareContext.test(name: name).modify { $0.payload?.properties = ["answeredBy": .string(tag)] })
            done.signal()
        }
        thread.name = "answering"
        thread.start()
        done.wait()
    }
}

extension MiddlewareContext {
    /// A context for a track call named `name` (what a middleware hands on may be any context).
    static func test(name: String) -> MiddlewareContext {
        var event = Event(type: .track, payload: ["type": "track", "event": .string(name), "messageId": .string("m-\(name)")])
        event.anonymousId = "a-1"
        return MiddlewareContext(payload: event)
    }
}

@Suite struct MiddlewareLaterTests {
    @Test func sourceMiddlewareAnsweringLaterFromOtherThreadsKeepsTheOrderEventsEntered() throws {
        let held = HeldNexts()
        let (analytics, errors) = makeClient(["D"]) { $0.sourceMiddleware = [held.middleware(deferring: ["A", "C"])] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        // The caller never waits for an answer: every track returns while A and C are unanswered.
        let returned = DispatchSemaphore(value: 0)
        Thread {
            for name in ["A", "B", "C", "D"] { analytics.track(name) }
            returned.signal()
        }.start()
        #expect(returned.wait(timeout: .now() + 5) == .success, "track waited for a middleware's answer")
        #expect(held.next("C") != nil)
        // B and D were answered at once but entered after A: they wait behind it.
        #expect(d.names.isEmpty)

        held.answer("C", tag: "second thread")
        // Once the chain's queue has acted on C's answer, nothing reached the destination yet.
        let plugin = try #require(analytics.timeline.plugins(of: .before).compactMap { $0 as? MiddlewarePlugin }.first)
        plugin.queue.sync {}
        #expect(analytics.timeline.stats(forKey: "D")?.received == 0, "C was answered first but entered after A")
        held.answer("A", tag: "first thread")
        #expect(analytics.flush())
        #expect(d.names == ["A", "B", "C", "D"])
        #expect(d.events[0].properties["answeredBy"] == "first thread")
        #expect(d.events[2].properties["answeredBy"] == "second thread")
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    @Test func anAnswerPastTheDeadlineIsDroppedAndReportedWithMiddlewareAndMessageId() throws {
        let held = HeldNexts()
        let (analytics, errors) = makeClient(["D"]) {
            $0.sourceMiddleware = [BlockMiddleware { c, n in n(c) }, held.middleware(deferring: ["Late"])]
            $0.middlewareTimeout = 0.3
        }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.process(payloadText: #"{"type":"track","event":"Late","messageId":"m-late","anonymousId":"a"}"#)
        analytics.track("After")
        // flush waits for the chain within the deadline: the late event is dropped by then.
        #expect(analytics.flush())
        #expect(d.names == ["After"], "what entered after the dropped event goes on")
        let messages = errors.messages
        #expect(messages == ["plugin middleware: source middleware 2 of 2 did not call next within 0.3 s for track event m-late; dropped"])

        // Answering after the deadline changes nothing and is reported.
        held.next("Late")!(MiddlewareContext.test(name: "Late"))
        #expect(analytics.flush())
        #expect(d.names == ["After"])
        #expect(errors.messages.last == "plugin middleware: source middleware 2 of 2 called next after its deadline (the event was dropped then); ignored (track event m-late)")
        #expect(analytics.shutdown())
    }

    @Test func aSecondCallOfNextIsAReportedNoOp() throws {
        let twice = BlockMiddleware { context, next in
            guard context.payload != nil else { return next(context) }
            next(context)
            next(context.modify { $0.payload?.event = "second" })
        }
        let (analytics, errors) = makeClient(["D"]) { $0.destinationMiddleware = ["D": [twice]] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.process(payloadText: #"{"type":"track","event":"Once","messageId":"m-1","anonymousId":"a"}"#)
        #expect(analytics.flush())
        #expect(d.names == ["Once"])
        #expect(errors.messages == [#"plugin D: destination middleware 1 of 1 of "D" called next twice; the second call is ignored (track event m-1)"#])
        #expect(analytics.shutdown())
    }

    @Test func destinationMiddlewareAnsweringLaterDeliversOnTheWorkerInOrderAndHoldsUpNobodyElse() throws {
        let held = HeldNexts()
        let (analytics, errors) = makeClient(["A", "B"]) { $0.destinationMiddleware = ["A": [held.middleware(deferring: ["1", "3"])]] }
        let a = ThreadRecordingDestination("A")
        let b = RecordingDestination("B")
        analytics.add(plugin: a)
        analytics.add(plugin: b)
        for name in ["1", "2", "3"] { analytics.track(name) }
        #expect(held.next("3") != nil)
        // B is not held up by A's middleware.
        #expect(eventually { b.names == ["1", "2", "3"] })
        #expect(a.names.isEmpty)
        held.answer("3", tag: "x")
        held.answer("1", tag: "y")
        #expect(analytics.flush())
        #expect(a.names == ["1", "2", "3"])
        // Every call of A came from A's one worker thread, never from the answering threads.
        #expect(Set(a.threads).count == 1 && !a.threads.contains("answering"), "\(a.threads)")
        let stats = try #require(analytics.timeline.stats(forKey: "A"))
        #expect(stats.delivered == 3 && stats.dropped == 0)
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    @Test func flushAndShutdownWaitForAnswersThatComeWithinTheDeadline() throws {
        let answerIn = BlockMiddleware { context, next in
            next.later()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { next(context) }
        }
        for destinationSide in [false, true] {
            let (analytics, errors) = makeClient(["D"]) {
                if destinationSide { $0.destinationMiddleware = ["D": [answerIn]] } else { $0.sourceMiddleware = [answerIn] }
            }
            let d = RecordingDestination("D")
            analytics.add(plugin: d)
            analytics.track("First")
            analytics.track("Second")
            #expect(analytics.flush())
            #expect(d.names == ["First", "Second"], "destination side: \(destinationSide)")
            #expect(d.recorded.flushes == 1)
            analytics.track("Last")
            #expect(analytics.shutdown())
            #expect(d.names == ["First", "Second", "Last"], "shutdown waited for the answer (destination side: \(destinationSide))")
            #expect(errors.all.isEmpty, "\(errors.messages)")
        }
    }

    @Test func anAnswerGivenFromInsideAnotherDestinationsHookNeitherDeadlocksNorRunsThere() throws {
        let held = HeldNexts()
        let a = ThreadRecordingDestination("A")
        // B answers A's held event from inside its own hook (a pipeline thread) and waits for
        // nothing: the answer must be carried elsewhere, not run on B's worker.
        let b = AnsweringDestination("B") { event in
            if event.event == "Go" { held.next("Held")?(MiddlewareContext.test(name: "Held")) }
        }
        let (analytics, errors) = makeClient(["A", "B"]) {
            $0.destinationMiddleware = ["A": [held.middleware(deferring: ["Held"])]]
            $0.destinationQueueCapacity = 1
            $0.destinationOverflow = .wait(seconds: .infinity)
        }
        analytics.add(plugin: a)
        analytics.add(plugin: b)
        let done = DispatchSemaphore(value: 0)
        Thread {
            analytics.track("Held")
            _ = held.next("Held")
            analytics.track("Go")
            _ = analytics.flush()
            done.signal()
        }.start()
        try #require(done.wait(timeout: .now() + 20) == .success, "answering from inside a hook deadlocked the client")
        #expect(a.names == ["Held", "Go"])
        #expect(Set(a.threads).count == 1)
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    /// Destination middleware in front of a loaded library (the Swift fixture, answering in its
    /// hook) behaves the same in this process and in a runner process.
    @Test(arguments: [IsolationMode.inProcess, .process])
    func destinationMiddlewareAnsweringLaterInFrontOfALibrary(mode: IsolationMode) throws {
        let held = HeldNexts()
        _ = try SwiftPluginFiles.load("LaterFixtureIntegration")
        let c = try FixtureLibraryClient(file: SwiftPluginFiles.path("LaterFixtureIntegration"), key: "Later", settings: ["mode": "inline"],
                                         mode: mode) { $0.destinationMiddleware = ["Later": [held.middleware(deferring: ["1"])]] }
        for name in ["1", "2", "3"] { c.analytics.track(name) }
        #expect(held.next("1") != nil)
        let stats = try #require(c.stats)
        #expect(stats.delivered == 0, "2 and 3 wait behind 1")
        held.answer("1", tag: "later")
        #expect(c.analytics.flush())
        #expect(stats.delivered == 3 && stats.dropped == 0 && stats.failed == 0, "\(stats)")
        #expect(c.analytics.shutdown())
        #expect(c.errors.all.isEmpty, "\(c.errors.messages)")
    }

    @Test func aResetAnsweredLaterWaitsForTheAnswer() throws {
        let later = BlockMiddleware { context, next in
            guard context.eventType == .reset else { return next(context) }
            next.later()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { next(context) }
        }
        let (analytics, errors) = makeClient(["D"]) { $0.destinationMiddleware = ["D": [later]] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.reset()
        #expect(analytics.flush())
        #expect(d.recorded.resets == 1)
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }
}

/// Records the events and the thread each arrived on.
final class ThreadRecordingDestination: DestinationPlugin, @unchecked Sendable {
    let key: String
    let timeline = Timeline()
    private let state = Locked<[(String, String)]>([])
    init(_ key: String) { self.key = key }
    var names: [String] { state.withLock { $0.map(\.0) } }
    var threads: [String] { state.withLock { $0.map(\.1) } }
    func execute(_ event: Event) -> Event? {
        let name = event.event ?? event.type.rawValue
        let thread = Thread.current.name ?? "?"
        state.withLock { $0.append((name, thread)) }
        return event
    }
}

/// Calls `body` from its hook.
final class AnsweringDestination: DestinationPlugin, @unchecked Sendable {
    let key: String
    let timeline = Timeline()
    private let body: @Sendable (Event) -> Void
    init(_ key: String, _ body: @escaping @Sendable (Event) -> Void) {
        self.key = key
        self.body = body
    }
    func execute(_ event: Event) -> Event? {
        body(event)
        return event
    }
}

extension Analytics {
    /// Runs one message given as JSON text.
    func process(payloadText: String) {
        _ = try? process(payload: JSON(parsing: payloadText).objectValue!)
    }
}
