/// The hooks a Swift integration can implement, one protocol each.
///
/// A type conforms to the protocols of the hooks it implements, and only those: the kit fills the
/// matching `ah_hooks` entries and leaves the others NULL, so the host never calls an empty hook
/// (no per-event cost) and `analytics-host plugins` lists exactly what the integration handles.
/// This is analytics-ios's `@optional` integration methods, made checkable: a Swift protocol's
/// default implementation cannot be told apart from an override, a conformance can.
///
/// A method named like a hook on a type that does not conform to that hook's protocol is never
/// called; `analytics-host plugins` shows the hooks a library declares, which makes the slip easy
/// to see.
///
/// Threads and errors: as for ``Integration`` — one call at a time per instance, in order; throw
/// ``IntegrationError/retryable(_:)`` to be called again later.
public protocol TrackHook: Integration {
    func track(_ event: TrackEvent) throws
}

public protocol IdentifyHook: Integration {
    func identify(_ event: IdentifyEvent) throws
}

public protocol ScreenHook: Integration {
    /// Screen calls, and `page` calls from web-style sources.
    func screen(_ event: ScreenEvent) throws
}

public protocol GroupHook: Integration {
    func group(_ event: GroupEvent) throws
}

public protocol AliasHook: Integration {
    func alias(_ event: AliasEvent) throws
}

/// The user logged out: forget per-user state.
public protocol ResetHook: Integration {
    func reset() throws
}

/// Deliver what is buffered and make it durable before returning.
public protocol FlushHook: Integration {
    func flush() throws
}

/// New settings for this integration; `.initial` the first time after `init`, then `.refresh`.
public protocol SettingsHook: Integration {
    func update(settings: JSONObject, type: UpdateType) throws
}

/// The host's lifecycle: it finished starting, and it begins to stop (`flush` and the end of the
/// instance follow). Implement either or both; the other does nothing.
public protocol LifecycleHook: Integration {
    func started() throws
    func stopping() throws
}

extension LifecycleHook {
    public func started() throws {}
    public func stopping() throws {}
}

/// Every event hook: a destination that forwards all five kinds of call.
public typealias EventHooks = TrackHook & IdentifyHook & ScreenHook & GroupHook & AliasHook

// MARK: - Completion forms (ABI 1.3 finish later)

/// The completion form of the event hooks: the hook may return before the event is handled and
/// answer later through its ``Completion`` (exactly once, from any thread), e.g. when the vendor
/// acknowledged the batch that held it. A type conforms to one form of a hook, not both (if it
/// does, this form is used). Throwing from the hook answers at once, as in the plain form.
///
/// The host bounds how many calls are pending at once per instance (``IntegrationHost/maxPending``):
/// past it, it waits for an answer before the next call — upload what you hold before that.
/// A flush waits (within the host's hook timeout) for the answers of every pending call.
public protocol TrackLaterHook: Integration {
    func track(_ event: TrackEvent, completion: Completion) throws
}

public protocol IdentifyLaterHook: Integration {
    func identify(_ event: IdentifyEvent, completion: Completion) throws
}

public protocol ScreenLaterHook: Integration {
    /// Screen calls, and `page` calls from web-style sources.
    func screen(_ event: ScreenEvent, completion: Completion) throws
}

public protocol GroupLaterHook: Integration {
    func group(_ event: GroupEvent, completion: Completion) throws
}

public protocol AliasLaterHook: Integration {
    func alias(_ event: AliasEvent, completion: Completion) throws
}

/// Every event hook in its completion form.
public typealias EventLaterHooks = TrackLaterHook & IdentifyLaterHook & ScreenLaterHook & GroupLaterHook & AliasLaterHook

/// What the host refused or gave up on without a return value to say so (ABI 1.3
/// `AH_EXT_NOTICES`): a completion it ignored (given twice, or after the call was abandoned),
/// pending calls it abandoned after the hook timeout. The host reports them either way; an
/// integration hears them to log, fix its state or slow down. Called like the other hooks (one at
/// a time, on the instance's thread); must not block.
public protocol NoticesHook: Integration {
    func notice(_ notice: HostNotice)
}

/// One notice from the host.
public enum HostNotice: Sendable, Equatable {
    /// Pending calls passed the hook timeout (or the instance ended first) and were abandoned.
    case abandoned(String)
    /// A call of the integration was refused and did nothing (a completion twice, or too late).
    case refused(String)
    /// A kind this kit does not know (a newer host): ignore it.
    case other(kind: Int32, String)
}
