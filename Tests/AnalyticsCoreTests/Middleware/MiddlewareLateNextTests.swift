import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// analytics-ios's asynchronous middleware, as its users write it: the block returns, and `next`
/// is called afterwards from another thread, without this project's `next.later()`. Every event
/// goes through (not in order, as in analytics-ios), counted in `unorderedAnswers`.
@Suite struct MiddlewareLateNextTests {
    /// The `next`s a middleware returned without calling, for the test to call afterwards.
    final class Kept: Sendable {
        let items = Locked<[(MiddlewareContext, MiddlewareNext)]>([])
        var middleware: Middleware {
            BlockMiddleware { [self] context, next in
                guard case .event = context.eventType else { return next(context) }
                items.withLock { $0.append((context, next)) }
            }
        }
        /// Calls every kept `next` from a thread of its own, after every block returned.
        func answerAll() {
            let all = items.withLock { $0 }
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                for (context, next) in all { next(context) }
                done.signal()
            }
            thread.start()
            done.wait()
        }
    }

    @Test func sourceMiddlewareCallingNextAfterReturningLetsAllOfAHundredThrough() throws {
        let kept = Kept()
        let (analytics, errors) = makeClient(["D"]) { $0.sourceMiddleware = [kept.middleware] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        for i in 0..<100 { analytics.track("E\(i)") }
        #expect(d.names.isEmpty, "nothing passed while the middleware held them")
        kept.answerAll()
        #expect(eventually { d.names.count == 100 }, "\(d.names.count) of 100 through")
        #expect(Set(d.names) == Set((0..<100).map { "E\($0)" }))
        let chain = try #require(analytics.find(pluginType: MiddlewarePlugin.self))
        #expect(chain.unorderedAnswers == 100)
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    @Test func destinationMiddlewareCallingNextAfterReturningDeliversAndCountsThem() throws {
        let kept = Kept()
        let (analytics, errors) = makeClient(["D"]) { $0.destinationMiddleware = ["D": [kept.middleware]] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        for i in 0..<100 { analytics.track("E\(i)") }
        #expect(eventually { kept.items.withLock { $0.count } == 100 })
        kept.answerAll()
        #expect(eventually { d.names.count == 100 }, "\(d.names.count) of 100 through")
        let stats = try #require(analytics.timeline.stats(forKey: "D"))
        #expect(eventually { stats.delivered == 100 && stats.dropped == 0 }, "delivered \(stats.delivered), dropped \(stats.dropped)")
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    @Test func analyticsIOSStyleAsyncMiddlewareLosesNothing() throws {
        // As analytics-ios's docs write it: hop to a queue, call next there.
        let hop = DispatchQueue(label: "consent lookup")
        let (analytics, errors) = makeClient(["D"]) {
            $0.sourceMiddleware = [BlockMiddleware { context, next in
                hop.async { next(context) }
            }]
        }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        for i in 0..<100 { analytics.track("E\(i)") }
        #expect(eventually { d.names.count == 100 }, "\(d.names.count) of 100 through")
        #expect(errors.all.isEmpty, "\(errors.messages)")
        #expect(analytics.shutdown())
    }

    @Test func aSecondLateCallIsStillReportedAndIgnored() throws {
        let kept = Kept()
        let (analytics, errors) = makeClient(["D"]) { $0.sourceMiddleware = [kept.middleware] }
        let d = RecordingDestination("D")
        analytics.add(plugin: d)
        analytics.track("Once")
        kept.answerAll()
        kept.answerAll()
        #expect(eventually { d.names == ["Once"] })
        #expect(eventually { errors.messages.contains { $0.contains("called next twice") } }, "\(errors.messages)")
        #expect(analytics.shutdown())
        #expect(d.names == ["Once"])
    }
}
