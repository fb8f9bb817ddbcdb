import CAnalyticsABI
import Synchronization

/// One live instance of an integration library, called with Swift values.
///
/// Events cross as their JSON text (the event's cached encoding when the pipeline made one, so
/// fanning out to several libraries encodes once). Hooks the library left NULL are successful
/// no-ops. Status codes become `NativeHookResult`, with the library's error text.
///
/// Thread rule (the header's): calls on one instance must not overlap; the destination worker
/// that owns the instance guarantees it. Different instances may be used concurrently.
package final class NativeIntegration: @unchecked Sendable {
    package let library: NativeLibrary
    /// Read for every hook call, written only by `destroy` (on the thread that calls the hooks).
    @exclusivity(unchecked) private var instance: OpaquePointer?
    private let hooks: ah_hooks
    /// Revoked once `destroy` returned: the table stays valid, its calls become no-ops.
    private let services: HostTable
    private let errorBuffer: ErrorBuffer
    /// Set (from any thread) when the host gave up on a hook that did not return: no hook is
    /// called any more, `destroy` included.
    private let abandoned = Atomic<Bool>(false)

    /// Which `update` this is for the instance.
    package enum UpdateKind: Sendable { case initial, refresh }
    /// Host phases announced through the (ABI 1.1) lifecycle hook.
    package enum Phase: Sendable { case started, stopping }

    init(library: NativeLibrary, instance: OpaquePointer, services: HostTable, errorBuffer: ErrorBuffer) {
        self.library = library
        self.instance = instance
        self.hooks = library.hooks
        self.services = services
        self.errorBuffer = errorBuffer
    }

    deinit { destroy() }

    package var key: String { library.info.key }
    /// False once `destroy` ran; every call is then a no-op.
    package var isAlive: Bool { instance != nil }

    /// The host leaves this instance behind (a hook of it never returned): it is never called
    /// again and never destroyed, since destroying an instance that is still inside a hook is
    /// not safe; its host table is revoked. Any thread; idempotent.
    package func abandon() {
        abandoned.store(true, ordering: .releasing)
        services.revoke()
    }

    /// False once destroyed or abandoned.
    var isCallable: Bool { live != nil }

    /// The instance, unless destroyed or abandoned.
    private var live: OpaquePointer? {
        abandoned.load(ordering: .acquiring) ? nil : instance
    }

    /// Hands an event to the hook of its type (`page` goes to `screen`).
    package func deliver(_ event: Event) -> NativeHookResult { deliverText(event) }

    func deliver(_ event: EncodedEvent) -> NativeHookResult { deliverText(event) }

    @inline(__always)
    private func deliverText<E: EventText>(_ event: E) -> NativeHookResult {
        switch event.type {
        case .track: return callEventHook(hooks.track, event, "track")
        case .identify: return callEventHook(hooks.identify, event, "identify")
        case .screen, .page: return callEventHook(hooks.screen, event, "screen")
        case .group: return callEventHook(hooks.group, event, "group")
        case .alias: return callEventHook(hooks.alias, event, "alias")
        }
    }

    package func reset() -> NativeHookResult {
        guard let instance = live, let hook = hooks.reset else { return .ok }
        errorBuffer.clear()
        return NativeHookResult(status: hook(instance, errorBuffer.base, errorBuffer.capacity), message: errorBuffer.message, hook: "reset")
    }

    package func flush() -> NativeHookResult {
        guard let instance = live, let hook = hooks.flush else { return .ok }
        errorBuffer.clear()
        return NativeHookResult(status: hook(instance, errorBuffer.base, errorBuffer.capacity), message: errorBuffer.message, hook: "flush")
    }

    /// New settings for this integration (the object under its key in `integrations`).
    package func update(settings: JSONObject, kind: UpdateKind) -> NativeHookResult {
        guard let instance = live, let hook = hooks.update else { return .ok }
        let text = settings.serializedBytes()
        let kindCode = Int32(kind == .initial ? AH_UPDATE_INITIAL : AH_UPDATE_REFRESH)
        errorBuffer.clear()
        let status = text.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                hook(instance, chars.baseAddress!, chars.count, kindCode, errorBuffer.base, errorBuffer.capacity)
            }
        }
        return NativeHookResult(status: status, message: errorBuffer.message, hook: "update")
    }

    /// Announces a host phase; libraries built against ABI 1.0 have no such hook.
    package func lifecycle(_ phase: Phase) -> NativeHookResult {
        guard let instance = live, let hook = hooks.lifecycle else { return .ok }
        let code = Int32(phase == .started ? AH_LIFECYCLE_STARTED : AH_LIFECYCLE_STOPPING)
        errorBuffer.clear()
        return NativeHookResult(status: hook(instance, code, errorBuffer.base, errorBuffer.capacity), message: errorBuffer.message, hook: "lifecycle")
    }

    /// An application event, through the library's `AH_EXT_APPLICATION` table (a no-op without one).
    package func application(_ event: ApplicationEvent) -> NativeHookResult {
        guard let instance = live, let hook = library.application?.hook else { return .ok }
        let text = event.json.serializedBytes()
        errorBuffer.clear()
        let status = text.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                hook(instance, event.kind, chars.baseAddress!, chars.count, errorBuffer.base, errorBuffer.capacity)
            }
        }
        return NativeHookResult(status: status, message: errorBuffer.message, hook: "application_event")
    }

    /// The timeline plugins this instance added (ABI 1.2), in order.
    package var timelinePlugins: [NativeTimelinePlugin] { (services.services.timeline as? NativePluginRegistry)?.plugins ?? [] }

    /// Ends the instance (the library stops its threads before returning). Idempotent. The
    /// timeline plugins it added are removed and released first, as the header promises. A
    /// library that calls the host afterwards anyway finds a valid table whose calls do nothing.
    package func destroy() {
        guard let instance = live else { return }
        self.instance = nil
        services.services.timeline?.removeAll()
        services.instanceEnding()
        hooks.destroy?(instance)
        services.revoke()
    }

    /// Tells the library (`AH_EXT_NOTICES`) what of its doings the host refused or abandoned.
    func notice(_ kind: Int32, _ text: String) {
        guard let table = library.notices, let instance = live else { return }
        table.tell(instance, kind, text)
    }

    /// The live instance and the error buffer, for a caller that makes its own call (the validator).
    func withRawInstance(_ body: (OpaquePointer, ErrorBuffer) -> NativeHookResult) -> NativeHookResult {
        guard let instance = live else { return .ok }
        errorBuffer.clear()
        return body(instance, errorBuffer)
    }

    /// Whether the library takes many events per call (`AH_EXT_BATCH`), and how many at most.
    var batchSize: Int? { library.batch?.maxEvents }

    /// Hands events to the library's batch hook: nil when every event is OK (or the instance is
    /// gone), else one result per event.
    func deliver(batch run: borrowing BatchRun) -> [NativeHookResult]? {
        guard let table = library.batch, let instance = live else { return nil }
        return table.call(instance, run: run, errorBuffer: errorBuffer)
    }

    /// An event hook's answer when the hook may finish later (ABI 1.3, `AH_EXT_FINISH_LATER`).
    enum EventAnswer {
        case done(NativeHookResult)
        /// The hook answered AH_PENDING with this token: `pendingCalls` will hold its answer.
        case pending(UInt64)
    }

    /// This instance's pending calls (answers arrive there from any thread).
    var pendingCalls: PendingCalls { services.pendingCalls }

    /// Writes to the host's log under the library's key (as the library's own log calls do).
    func hostLog(_ level: NativeLogLevel, _ message: String) { services.services.log(level, message) }

    /// This instance's Retry-After, as its library passed it on (ABI 1.3, `AH_EXT_RETRY_AFTER`).
    var retryHint: RetryHint { services.retryHint }

    /// Like `deliver`, but the hook may answer pending.
    func deliverAllowingPending(_ event: Event) -> EventAnswer { deliverAllowingPending(EncodedEvent(event)) }

    func deliverAllowingPending(_ event: EncodedEvent) -> EventAnswer {
        let hook: EventHook?
        let name: StaticString
        switch event.type {
        case .track: (hook, name) = (hooks.track, "track")
        case .identify: (hook, name) = (hooks.identify, "identify")
        case .screen, .page: (hook, name) = (hooks.screen, "screen")
        case .group: (hook, name) = (hooks.group, "group")
        case .alias: (hook, name) = (hooks.alias, "alias")
        }
        guard let hook, let instance = live else { return .done(.ok) }
        let pending = services.pendingCalls
        pending.arm()
        errorBuffer.clear()
        let status = event.withText { raw -> ah_status in
            guard let base = raw.baseAddress else { return ah_status(AH_ERR_PERMANENT) }
            return hook(instance, base.assumingMemoryBound(to: CChar.self), raw.count, errorBuffer.base, errorBuffer.capacity)
        }
        let token = pending.takeCall()
        if status == ah_status(AH_PENDING) {
            if token != 0 { return .pending(token) }
            return .done(.permanent("\(name) answered AH_PENDING without taking a completion token"))
        }
        if token != 0, pending.void(token) {
            services.services.log(.error, "\(name) completed token \(token) but answered \(status) itself; the completion was ignored (a library bug)")
        }
        if status == ah_status(AH_OK) { return .done(.ok) }
        return .done(NativeHookResult(status: status, message: errorBuffer.message, hook: name))
    }

    typealias EventHook = @convention(c) (OpaquePointer, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int) -> ah_status

    /// The hot path: no allocation when the event's encoding is cached, one indirect call.
    @inline(__always)
    private func callEventHook<E: EventText>(_ hook: EventHook?, _ event: E, _ name: StaticString) -> NativeHookResult {
        guard let hook, let instance = live else { return .ok }
        errorBuffer.clear()
        let status = event.withText { raw -> ah_status in
            guard let base = raw.baseAddress else { return ah_status(AH_ERR_PERMANENT) }
            return hook(instance, base.assumingMemoryBound(to: CChar.self), raw.count, errorBuffer.base, errorBuffer.capacity)
        }
        if status == ah_status(AH_OK) { return .ok }
        return NativeHookResult(status: status, message: errorBuffer.message, hook: name)
    }
}

/// A host-owned `char err[]` passed to a library's fallible calls. One per instance: calls on an
/// instance are serialized, so the buffer is reused for every call without allocating.
final class ErrorBuffer: @unchecked Sendable {
    /// Bytes the library may write (one more is kept for a terminating NUL it may forget).
    let capacity = max(512, Int(AH_ERROR_CAPACITY_MIN))
    let base: UnsafeMutablePointer<CChar>

    init() {
        base = .allocate(capacity: capacity + 1)
        base.initialize(repeating: 0, count: capacity + 1)
    }

    deinit { base.deallocate() }

    @inline(__always) func clear() { base[0] = 0 }

    /// The text the library wrote (invalid UTF-8 is repaired, never trusted).
    var message: String {
        base[capacity] = 0
        return String(cString: base)
    }
}

/// The outcome of one hook call, from the library's status code and error text. Retryable and
/// permanent failures are kept apart so the destination can back off on one and report the other.
package enum NativeHookResult: Sendable, Equatable {
    case ok
    case retryable(String)
    case permanent(String)

    /// Maps a status; any value the header does not define counts as permanent.
    init(status: ah_status, message: @autoclosure () -> String, hook: StaticString) {
        switch status {
        case ah_status(AH_OK):
            self = .ok
        case ah_status(AH_ERR_RETRYABLE):
            let text = message()
            self = .retryable(text.isEmpty ? "\(hook) failed (retryable) without a reason" : text)
        case ah_status(AH_ERR_PERMANENT):
            let text = message()
            self = .permanent(text.isEmpty ? "\(hook) failed without a reason" : text)
        default:
            let text = message()
            self = .permanent("\(hook) returned unknown status \(status)" + (text.isEmpty ? "" : ": \(text)"))
        }
    }

    package var isOK: Bool {
        if case .ok = self { return true }
        return false
    }
}
