import Dispatch

// analytics-swift shapes that cannot work here. Each is declared unavailable with what to write
// instead, so that code brought from analytics-swift fails to compile with that advice rather
// than compiling and being ignored (a plugin's `flush(group:)` that nobody would call).

/// analytics-swift's destinations that finish a flush asynchronously. Unavailable: here
/// `flush()` runs on the destination's own worker and the client waits for it.
@available(*, unavailable, message: "flush(group:) is never called here: write func flush() and finish the work before it returns (it runs on the destination's own worker; the client waits for it, bounded by flushTimeout)")
public protocol FlushCompletion {
    func flush(group: DispatchGroup)
}

/// analytics-swift's plugins that hold events until they are ready. Unavailable: no plugin can
/// stop the client's pipeline here.
@available(*, unavailable, message: "a plugin cannot pause event processing here: do the setup in configure(analytics:) or update(settings:type:); a destination that is not ready keeps events in its own queue (its worker), or use middleware with next.later()")
public protocol WaitingPlugin: Plugin {}

extension Analytics {
    @available(*, unavailable, message: "no shared instance: create one Analytics(configuration:) and pass it where it is needed")
    public static func shared() -> Analytics { fatalError("unavailable") }

    @available(*, unavailable, message: "the queue is segment files, not one file per batch: read hasUnsentEvents, or flush(completion:) with a FlushResult")
    public var pendingUploads: [String]? { nil }
}
