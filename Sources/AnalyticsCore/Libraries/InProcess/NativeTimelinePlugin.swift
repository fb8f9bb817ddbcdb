import CAnalyticsABI
import Foundation
import Glibc
import Synchronization

/// A timeline plugin that a loaded library added through `AH_EXT_TIMELINE`: an ordinary `Plugin`
/// on the client's timeline or on one destination's own timeline, next to Swift plugins,
/// middleware and filters (one mechanism).
///
/// Rules of the header, and how they are kept here:
/// - Calls are serialized per plugin by a read/write lock: `process` takes it shared when the
///   plugin is `AH_PLUGIN_THREAD_SAFE` and exclusive otherwise; `update`, `reset` and `flush`
///   always take it exclusive, so they never overlap a `process`.
/// - `remove` may come at any time, from any thread, including from inside the plugin's own
///   callback: a counter of calls in progress with a "removed" bit decides, without any lock held
///   across the C call, that no call starts after the removal and that `release` runs exactly
///   once, after the last call in progress returned.
/// - KEEP returns the event as it came, carrying its JSON text so that later consumers (other
///   loaded plugins, loaded destinations) do not encode it again; REPLACE parses the text the
///   plugin wrote through the host's `ah_event_output` before `process` returns.
package final class NativeTimelinePlugin: EventPlugin, @unchecked Sendable {
    package let type: PluginType
    /// As given by the library (its key when it gave none): in reports, counts and listings.
    package let name: String
    /// The destination whose own timeline this plugin runs in; nil: the client's timeline.
    package let destinationKey: String?
    /// The key of the library whose instance added it.
    package let ownerKey: String
    /// The id `add` returned (never 0).
    package let id: UInt64
    package let threadSafe: Bool
    package let failClosed: Bool

    /// `process` answers that were failures (reported with the plugin's name).
    package var errors: Int { errorCount.load(ordering: .relaxed) }
    /// Whether `release` was called.
    package var isReleased: Bool { released.load(ordering: .acquiring) }

    private let callbacks: ah_timeline_plugin
    private let client: WeakAnalytics
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Twice the number of calls in progress, plus 1 once removed.
    private let calls = Atomic<Int>(0)
    private let released = Atomic<Bool>(false)
    private let releaseDone = DispatchSemaphore(value: 0)
    private let errorCount = Atomic<Int>(0)

    init(description: ah_timeline_plugin, type: PluginType, name: String, destinationKey: String?,
         ownerKey: String, id: UInt64, analytics: WeakAnalytics) {
        var callbacks = description
        callbacks.name = nil  // the library's strings were copied; never read them again
        callbacks.destination = nil
        self.callbacks = callbacks
        self.type = type
        self.name = name
        self.destinationKey = destinationKey
        self.ownerKey = ownerKey
        self.id = id
        self.threadSafe = description.flags & UInt32(AH_PLUGIN_THREAD_SAFE) != 0
        self.failClosed = description.flags & UInt32(AH_PLUGIN_FAIL_CLOSED) != 0
        self.client = analytics
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    // MARK: Events

    package func execute(_ event: Event) -> Event? {
        guard let process = callbacks.process, enter() else { return event }
        defer { leave() }
        if threadSafe { pthread_rwlock_rdlock(lock) } else { pthread_rwlock_wrlock(lock) }
        defer { pthread_rwlock_unlock(lock) }
        // Removed while waiting for the lock: the call must not start.
        if calls.load(ordering: .acquiring) & 1 != 0 { return event }

        var shared = event
        shared.shareEncoding()
        let bytes = shared.serializedBytes
        var output = NativeEventOutput(original: shared.payload)
        var message = ""
        let verdict = withUnsafeMutablePointer(to: &output) { outputPointer -> Int32 in
            var out = ah_event_output(ctx: UnsafeMutableRawPointer(outputPointer), write: nativeEventOutputWrite)
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Self.errorCapacity + 1) { err -> Int32 in
                let errBase = err.baseAddress!
                errBase[0] = 0
                errBase[Self.errorCapacity] = 0
                let verdict = bytes.withUnsafeBufferPointer { text in
                    outputPointer.pointee.originalText = text
                    defer { outputPointer.pointee.originalText = nil }
                    return text.withMemoryRebound(to: CChar.self) { chars in
                        process(callbacks.ctx, chars.baseAddress!, chars.count, &out, errBase, Self.errorCapacity)
                    }
                }
                if verdict != Int32(AH_EVENT_KEEP) && verdict != Int32(AH_EVENT_DROP) && verdict != Int32(AH_EVENT_REPLACE) {
                    message = String(cString: errBase)
                }
                return verdict
            }
        }
        switch verdict {
        case Int32(AH_EVENT_KEEP):
            return shared
        case Int32(AH_EVENT_DROP):
            return nil
        case Int32(AH_EVENT_REPLACE):
            if output.unchanged && output.replacement != nil { return shared }
            if let replacement = output.replacement { return replacement }
            return failed(shared, "answered REPLACE without a usable replacement"
                          + (output.problem.map { " (\($0))" } ?? " (nothing was written)"))
        default:
            let status = verdict == Int32(AH_EVENT_ERROR) ? "" : " (unknown answer \(verdict))"
            return failed(shared, "process failed\(status): \(message.isEmpty ? "no reason given" : message)")
        }
    }

    /// The smallest capacity the header promises, with room to spare.
    static let errorCapacity = max(512, Int(AH_ERROR_CAPACITY_MIN))

    /// Counts and reports a failure; the event goes on unchanged unless the plugin fails closed.
    /// The first failures are reported one by one, then one in a thousand with the count, so a
    /// plugin that fails on every event cannot flood the error handler.
    private func failed(_ event: Event, _ message: String) -> Event? {
        let count = errorCount.wrappingAdd(1, ordering: .relaxed).newValue
        client.value?.libraryProblems.pluginFailed(plugin: name, owner: ownerKey, failClosed: failClosed)
        if count <= Self.reportedOneByOne || count % 1000 == 0 {
            var text = message + (failClosed ? "; event dropped (fail-closed)" : "; event passed on unchanged")
            if count > Self.reportedOneByOne { text += " (\(count) failures so far; further ones are reported one in 1000)" }
            client.value?.report(.plugin(name: name, message: text))
        }
        return failClosed ? nil : event
    }

    static let reportedOneByOne = 10

    // MARK: Settings, reset, flush

    package func update(settings: Settings, type: UpdateType) {
        guard let update = callbacks.update else { return }
        let text = settings.json.serializedBytes()
        let kind = Int32(type == .initial ? AH_UPDATE_INITIAL : AH_UPDATE_REFRESH)
        exclusive {
            text.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { update(callbacks.ctx, $0.baseAddress!, $0.count, kind) }
            }
        }
    }

    package func reset() {
        guard let reset = callbacks.reset else { return }
        exclusive { reset(callbacks.ctx) }
    }

    package func flush() {
        guard let flush = callbacks.flush else { return }
        exclusive { flush(callbacks.ctx) }
    }

    /// Leaving one timeline (a destination that goes away) is not the end of the plugin: it is
    /// attached again to the next destination with its key. `release` comes with `remove`.
    package func shutdown() {}

    private func exclusive(_ body: () -> Void) {
        guard enter() else { return }
        defer { leave() }
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        if calls.load(ordering: .acquiring) & 1 != 0 { return }
        body()
    }

    // MARK: Removal and release

    /// Registers a call in progress; false once the plugin was removed (the registration is then
    /// undone, which may be what releases the plugin).
    @inline(__always)
    private func enter() -> Bool {
        if calls.add(2, ordering: .acquiringAndReleasing).oldValue & 1 == 0 { return true }
        leave()
        return false
    }

    @inline(__always)
    private func leave() {
        let now = calls.subtract(2, ordering: .acquiringAndReleasing).newValue
        if now == 1 { releaseOnce() }
    }

    /// No call starts after this returns; `release` runs now if no call is in progress, else when
    /// the last one returns (possibly on another thread). Returns false if it was removed before.
    @discardableResult
    func markRemoved() -> Bool {
        let before = calls.bitwiseOr(1, ordering: .acquiringAndReleasing).oldValue
        if before & 1 != 0 { return false }
        if before == 0 { releaseOnce() }
        return true
    }

    /// Waits until `release` ran (after `markRemoved`): an instance's plugins must be released
    /// before its `destroy`.
    func waitUntilReleased() {
        if isReleased { return }
        releaseDone.wait()
        releaseDone.signal()
    }

    private func releaseOnce() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        callbacks.release?(callbacks.ctx)
        releaseDone.signal()
    }
}

/// What one `process` call wrote through its `ah_event_output`, and the event it was given (a
/// replacement is read against it: the members it did not change are reused, not parsed again).
struct NativeEventOutput {
    var replacement: Event?
    var problem: String?
    /// The replacement is the original event (e.g. JavaScript gave it back as it came, but for
    /// the spelling of numbers): it goes on as a KEEP, exact and with its JSON text.
    var unchanged = false
    let original: JSONObject
    /// The JSON text of `original` the plugin was given; only during the call.
    var originalText: UnsafeBufferPointer<UInt8>?

    init(original: JSONObject) { self.original = original }
}

/// `ah_event_output.write`: parses and checks the replacement before returning (the text is only
/// borrowed), so a bad one is refused right there with the reason.
func nativeEventOutputWrite(_ ctx: UnsafeMutableRawPointer?, _ json: UnsafePointer<CChar>?, _ length: Int) -> ah_status {
    guard let ctx else { return ah_status(AH_ERR_PERMANENT) }
    let output = ctx.assumingMemoryBound(to: NativeEventOutput.self)
    output.pointee.replacement = nil
    func refuse(_ why: String) -> ah_status {
        output.pointee.problem = why
        return ah_status(AH_ERR_PERMANENT)
    }
    guard let json, length > 0 else { return refuse("the replacement is empty") }
    guard length <= BatchLimits.maxEventBytes else {
        return refuse("the replacement is \(length) bytes, over the event size limit of \(BatchLimits.maxEventBytes) bytes")
    }
    let text = UnsafeBufferPointer(start: UnsafeRawPointer(json).assumingMemoryBound(to: UInt8.self), count: length)
    let parsed: Result<(object: JSONObject, unchanged: Bool)?, JSONParseError>
    if let originalText = output.pointee.originalText {
        parsed = JSON.parseObject(text, derivedFrom: output.pointee.original, originalText: originalText)
    } else {
        parsed = JSON.parse(text).map { $0.objectValue.map { ($0, false) } }
    }
    do {
        guard let (payload, unchanged) = try parsed.get() else { return refuse("the replacement is not a JSON object") }
        output.pointee.unchanged = unchanged
        let event = try Event(payload: payload)
        // Numbers read from the text are finite (the parser refuses the rest) and the members the
        // plugin left alone are the event's own: the walk over every number is not needed.
        try event.validateFields()
        output.pointee.replacement = event
        output.pointee.problem = nil
        return ah_status(AH_OK)
    } catch let error as JSONParseError {
        return refuse("the replacement is not JSON: \(error)")
    } catch {
        return refuse("the replacement is not a valid event: \(error)")
    }
}
