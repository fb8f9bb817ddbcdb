import Foundation
import Synchronization

/// A middleware chain running as a plugin: source middleware sits at the start of the client's
/// timeline, destination middleware at the start of one destination's timeline. The chain is
/// fixed when the plugin is made.
///
/// A middleware that answers at once costs what it always did. One that answers later
/// (`next.later()`) takes the event off the caller's thread: the rest of the timeline sees it
/// when `next` is called (on a queue of this chain for source middleware, on the destination's
/// worker for destination middleware), and events leave the chain in the order they entered it,
/// as one analytics-ios chain keeps them.
public final class MiddlewarePlugin: EventPlugin, ControlGate, @unchecked Sendable {
    public let type: PluginType
    public let chain: [Middleware]
    /// The destination this chain belongs to, or nil for source middleware.
    public let destinationKey: String?
    let client = Locked<WeakAnalytics>(WeakAnalytics())
    /// How long a deferred answer may take; nil: the client's `middlewareTimeout` or `hookTimeout`.
    private let givenTimeout: Double?
    /// Tickets handed out and not yet released: 0 means no event waits and the fast path holds.
    let backlog = Atomic<Int>(0)
    let order = Locked(Order())
    /// Where deferred answers continue, deadlines fire and source events are released, in order.
    let queue: DispatchQueue
    let settled = NSCondition()
    let unorderedCount = Atomic<Int>(0)

    /// Events let through by a `next` called after its middleware returned without `later()`
    /// (analytics-ios code): delivered, but not in the chain's order and without a deadline.
    public var unorderedAnswers: Int { unorderedCount.load(ordering: .relaxed) }
    static let queueKey = DispatchSpecificKey<Void>()

    public init(_ chain: [Middleware], destinationKey: String? = nil, type: PluginType = .before, timeout: Double? = nil) {
        self.chain = chain
        self.destinationKey = destinationKey
        self.type = type
        self.givenTimeout = timeout
        queue = DispatchQueue(label: destinationKey.map { "middleware \($0)" } ?? "source middleware")
        queue.setSpecific(key: Self.queueKey, value: ())
    }

    public func configure(analytics: Analytics) { client.withLock { $0.value = analytics } }

    public var analytics: Analytics? {
        get { client.withLock { $0.value } }
        set { client.withLock { $0.value = newValue } }
    }

    /// Seconds a deferred answer may take.
    var timeout: Double {
        if let givenTimeout { return givenTimeout }
        guard let configuration = analytics?.configuration else { return 10 }
        return configuration.middlewareTimeout ?? configuration.hookTimeout
    }

    public func execute(_ event: Event) -> Event? {
        switch run(MiddlewareContext(payload: event), from: 0) {
        case .passed(let out):
            let payload = Self.payload(of: out)
            // Earlier events still wait: this one goes behind them.
            if backlog.load(ordering: .acquiring) == 0 { return payload }
            enqueueAnswered(payload)
            return nil
        case .dropped:
            return nil
        case .deferred(let step):
            park(step)
            return nil
        }
    }

    /// The event a context that passed the chain stands for: identity changes made on the
    /// context land in the payload.
    static func payload(of out: MiddlewareContext) -> Event? {
        guard var payload = out.payload else { return nil }
        if out.userId != payload.userId { payload.userId = out.userId }
        if out.anonymousId != payload.anonymousId { payload.anonymousId = out.anonymousId }
        return payload
    }

    func allows(_ control: ControlCall) -> Bool {
        let analytics = analytics
        var context = MiddlewareContext(control: control == .reset ? .reset : .flush,
                                        userId: analytics?.userId, anonymousId: analytics?.anonymousId)
        var index = 0
        // A middleware that answers a reset or flush later makes its caller wait, within the deadline.
        while true {
            switch run(context, from: index, control: true) {
            case .passed: return true
            case .dropped: return false
            case .deferred(let step):
                switch step.waitForAnswer(until: monotonicSeconds() + timeout) {
                case .pass(let next)?:
                    context = next
                    index = step.index + 1
                case .drop?:
                    return false
                case nil:
                    reportExpired(step)
                    return false
                }
            }
        }
    }

    enum ChainOutcome { case passed(MiddlewareContext), dropped, deferred(MiddlewareStep) }

    /// Runs the chain from `index` until it ends, a middleware drops the call, or one answers later.
    func run(_ context: MiddlewareContext, from index: Int, control: Bool = false) -> ChainOutcome {
        var current = context
        var i = index
        while i < chain.count {
            let step = MiddlewareStep(plugin: self, index: i, what: Self.describe(current), control: control)
            chain[i](current, MiddlewareNext(step: step))
            switch step.returned() {
            case .answered(.pass(let next)):
                current = next
                i += 1
            case .answered(.drop), .unanswered:
                return .dropped
            case .deferred:
                return .deferred(step)
            }
        }
        return .passed(current)
    }

    /// "track event m-1", "flush".
    static func describe(_ context: MiddlewareContext) -> String {
        switch context.eventType {
        case .event(let type): return "\(type.rawValue) event \(context.payload?.messageId ?? "(no messageId)")"
        case .reset: return "reset"
        case .flush: return "flush"
        }
    }

    /// "source middleware 2 of 3", "destination middleware 1 of 1 of \"Amplitude\"".
    func name(of step: MiddlewareStep) -> String {
        let position = "\(step.index + 1) of \(chain.count)"
        guard let destinationKey else { return "source middleware \(position)" }
        return "destination middleware \(position) of \"\(destinationKey)\""
    }

    func reportMisuse(_ step: MiddlewareStep, _ text: String) {
        report("\(name(of: step)) \(text) (\(step.what))")
    }

    func reportExpired(_ step: MiddlewareStep) {
        report("\(name(of: step)) did not call next within \(timeout) s for \(step.what); dropped")
    }

    func report(_ message: String) {
        let plugin = destinationKey ?? "middleware"
        analytics?.report(.plugin(name: plugin, message: message))
    }

    // MARK: Flush, reset, shutdown: what waits in the chain goes on first

    public func flush() { settle(waitingForRelease: true) }
    public func reset() { settle(waitingForRelease: true) }
    public func shutdown() { settle(waitingForRelease: true) }
}
