/// A middleware chain running as a plugin: source middleware sits at the start of the client's
/// timeline, destination middleware at the start of one destination's timeline. The chain is
/// fixed when the plugin is made.
public final class MiddlewarePlugin: Plugin, ControlGate {
    public let type: PluginType
    public let chain: [Middleware]
    /// The destination this chain belongs to, or nil for source middleware.
    public let destinationKey: String?
    private let client = Locked<WeakAnalytics>(WeakAnalytics())

    public init(_ chain: [Middleware], destinationKey: String? = nil, type: PluginType = .before) {
        self.chain = chain
        self.destinationKey = destinationKey
        self.type = type
    }

    public func configure(analytics: Analytics) { client.withLock { $0.value = analytics } }

    public func execute(_ event: Event) -> Event? {
        guard let out = run(MiddlewareContext(payload: event)) else { return nil }
        guard var payload = out.payload else { return nil }
        // Identity changes made on the context land in the payload.
        if out.userId != payload.userId { payload.userId = out.userId }
        if out.anonymousId != payload.anonymousId { payload.anonymousId = out.anonymousId }
        return payload
    }

    func allows(_ control: ControlCall) -> Bool {
        let analytics = client.withLock { $0.value }
        let context = MiddlewareContext(control: control == .reset ? .reset : .flush,
                                        userId: analytics?.userId, anonymousId: analytics?.anonymousId)
        return run(context) != nil
    }

    /// Runs the chain from `index`; nil when some middleware did not call `next`.
    func run(_ context: MiddlewareContext, from index: Int = 0) -> MiddlewareContext? {
        if index == chain.count { return context }
        var result: MiddlewareContext?
        var called = false
        chain[index](context) { next in
            guard !called else { return }  // a second call to next is ignored
            called = true
            result = run(next, from: index + 1)
        }
        return result
    }
}

/// Block middleware, as in analytics-ios: look at the context, then call `next` with it (or a
/// modified copy) to let it through. Not calling `next` drops the call — for a destination
/// middleware, for that destination only.
///
/// `next` must be called before the middleware returns; the chain runs on the timeline, in line.
public typealias Middleware = @Sendable (_ context: MiddlewareContext, _ next: (MiddlewareContext) -> Void) -> Void

/// Builds a middleware from a closure; reads like analytics-ios's `BlockMiddleware`.
public func BlockMiddleware(_ block: @escaping Middleware) -> Middleware { block }
