/// Block middleware, as in analytics-ios: look at the context, then call `next` with it (or a
/// modified copy) to let it through. Not calling `next` drops the call — for a destination
/// middleware, for that destination only.
///
/// `next` must be called before the middleware returns; the chain runs on the timeline, in line.
public typealias Middleware = @Sendable (_ context: MiddlewareContext, _ next: (MiddlewareContext) -> Void) -> Void

/// Builds a middleware from a closure; reads like analytics-ios's `BlockMiddleware`.
public func BlockMiddleware(_ block: @escaping Middleware) -> Middleware { block }
