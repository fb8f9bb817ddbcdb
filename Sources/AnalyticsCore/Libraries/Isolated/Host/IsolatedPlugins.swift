import CAnalyticsABI
import Foundation
import Glibc

/// The timeline plugins that a process-isolated library added (`AH_EXT_TIMELINE` in its runner),
/// as the host runs them: each is an ordinary ``NativeTimelinePlugin`` (the same serialization,
/// removal, failure reporting and reading of replacements as in-process) whose C callbacks are the
/// host's own. `process` sends the event to the runner and waits for the plugin's verdict;
/// `update`, `reset`, `flush` and `release` are sent one-way, in order, and the runner calls them
/// on its plugin thread in that order.
///
/// One object per runner process: when the process ends, its calls in progress fail (the event
/// goes on unchanged, or is dropped under `AH_PLUGIN_FAIL_CLOSED`, reported with the plugin's
/// name) and its plugins leave the timeline; a restarted process's `create` adds them again.
/// A `process` call that gets no verdict within the hook deadline kills the process.
final class IsolatedPlugins: @unchecked Sendable {
    let registry: NativePluginRegistry
    private let process: IsolatedProcess
    private let timeout: Double
    private let kill: @Sendable () -> Void
    private let state = Locked(State())

    private struct State {
        /// The runner's plugin id → the host's.
        var hostIds: [UInt64: UInt64] = [:]
        var names: [UInt64: String] = [:]
        var waiters: [UInt32: Waiter] = [:]
        var nextCall: UInt32 = 1
        /// Why no call can be made any more.
        var ended: String?
        /// The call that got no verdict in time (the process was killed for it).
        var killedFor: String?
    }

    final class Waiter: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        let plugin: String
        var verdict = Int32(AH_EVENT_ERROR)
        var replacement: [UInt8]?
        var message = ""
        init(plugin: String) { self.plugin = plugin }
    }

    /// `kill`: ends the runner process (a plugin that stopped answering).
    init(key: String, analytics: Analytics?, process: IsolatedProcess, timeout: Double, kill: @escaping @Sendable () -> Void) {
        registry = NativePluginRegistry(ownerKey: key, analytics: analytics)
        self.process = process
        self.timeout = timeout
        self.kill = kill
    }

    /// What a plugin call in progress was doing, for the crash report ("running timeline plugin X").
    var inFlight: String? {
        state.withLock { s in s.killedFor ?? s.waiters.values.first.map { "running timeline plugin \($0.plugin)" } }
    }

    // MARK: Calls from the runner

    /// `timelineAdd`: the runner's plugin `id` and its description (JSON: type, flags, name,
    /// destination, and which callbacks exist).
    func add(runnerId: UInt64, description: JSONObject) throws(NativePluginRegistry.AddError) {
        let name = description["name"]?.stringValue
        let destination = description["destination"]?.stringValue
        let proxy = Unmanaged.passRetained(IsolatedPluginProxy(owner: self, runnerId: runnerId)).toOpaque()
        var plugin = ah_timeline_plugin()
        plugin.size = UInt32(MemoryLayout<ah_timeline_plugin>.size)
        // Numbers from the runner: out of their field's range is an unknown type or flag (refused
        // by the registry), never a truncated one that happens to be known.
        plugin.type = description["type"]?.intValue.flatMap { Int32(exactly: $0) } ?? -1
        plugin.flags = description["flags"].map { $0.intValue.flatMap { UInt32(exactly: $0) } ?? UInt32.max } ?? 0
        plugin.ctx = proxy
        if description["process"] == .bool(true) { plugin.process = isolatedPluginProcess }
        if description["update"] == .bool(true) { plugin.update = isolatedPluginUpdate }
        if description["reset"] == .bool(true) { plugin.reset = isolatedPluginReset }
        if description["flush"] == .bool(true) { plugin.flush = isolatedPluginFlush }
        plugin.release = isolatedPluginRelease
        // The strings are copied by `add`; they live until it returns.
        let id: UInt64
        do throws(NativePluginRegistry.AddError) {
            id = try withOptionalCString(name) { namePointer throws(NativePluginRegistry.AddError) in
                try withOptionalCString(destination) { destinationPointer throws(NativePluginRegistry.AddError) in
                    plugin.name = namePointer
                    plugin.destination = destinationPointer
                    return try registry.add(plugin)
                }
            }
        } catch {
            Unmanaged<IsolatedPluginProxy>.fromOpaque(proxy).release()
            throw error
        }
        state.withLock { s in
            s.hostIds[runnerId] = id
            s.names[runnerId] = name ?? registry.ownerKey
        }
    }

    /// `timelineRemove`: false for an id the runner does not have here.
    func remove(runnerId: UInt64) -> Bool {
        guard let id = state.withLock({ $0.hostIds.removeValue(forKey: runnerId) }) else { return false }
        return registry.remove(id: id)
    }

    /// A `verdict` frame: the answer to one `process` call.
    func deliverVerdict(_ frame: RunnerFrames.Verdict) {
        let (id, verdict, hasReplacement, bytes) = (frame.id, frame.verdict, frame.hasReplacement, frame.bytes)
        guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: id) }) else { return }
        waiter.verdict = verdict
        if verdict == Int32(AH_EVENT_REPLACE) {
            waiter.replacement = hasReplacement ? bytes : nil
        } else {
            waiter.message = String(decoding: bytes, as: UTF8.self)
        }
        waiter.done.signal()
    }

    /// The process ended: calls in progress fail with `reason`, no new one starts, and every
    /// plugin leaves the timeline (released once its call in progress, if any, returned).
    func end(_ reason: String) {
        let waiters = state.withLock { s -> [Waiter] in
            if s.ended == nil { s.ended = reason }
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters {
            waiter.message = reason
            waiter.done.signal()
        }
        registry.removeAll()
    }

    // MARK: Calls from the host's timeline

    fileprivate func process(_ runnerId: UInt64, _ json: UnsafePointer<CChar>, _ length: Int,
                             _ out: UnsafePointer<ah_event_output>, _ err: UnsafeMutablePointer<CChar>, _ cap: Int) -> Int32 {
        func fail(_ text: String) -> Int32 {
            _ = HostTable.copy(text, into: err, capacity: cap)
            return Int32(AH_EVENT_ERROR)
        }
        let registered = state.withLock { s -> (UInt32, Waiter)? in
            guard s.ended == nil else { return nil }
            let id = s.nextCall
            s.nextCall = s.nextCall &+ 1 == 0 ? 1 : s.nextCall &+ 1
            let waiter = Waiter(plugin: s.names[runnerId] ?? registry.ownerKey)
            s.waiters[id] = waiter
            return (id, waiter)
        }
        guard let (callId, waiter) = registered else {
            return fail(state.withLock { $0.ended } ?? "its process ended")
        }
        var w = WireWriter()
        w.begin(.plugin)
        w.u32(callId)
        w.i64(Int64(bitPattern: runnerId))
        w.u8(IsolationWire.PluginOp.process.rawValue)
        w.data(UnsafeRawBufferPointer(start: json, count: length))
        w.end()
        let deadline = DispatchTime.now() + timeout
        if !process.send(w.bytes, deadline: monotonicSeconds() + timeout) {
            if state.withLock({ $0.waiters.removeValue(forKey: callId) }) != nil {
                return fail("the event could not be sent to its process")
            }
        }
        if waiter.done.wait(timeout: deadline) == .timedOut {
            let late = state.withLock { s -> Bool in
                guard s.waiters.removeValue(forKey: callId) != nil else { return false }
                s.killedFor = "running timeline plugin \(waiter.plugin), which did not answer within \(timeout) s"
                return true
            }
            if late {
                kill()
                return fail("did not answer within \(timeout) s; its process was killed")
            }
            waiter.done.wait()  // answered (or ended) just now
        }
        switch waiter.verdict {
        case Int32(AH_EVENT_KEEP), Int32(AH_EVENT_DROP):
            return waiter.verdict
        case Int32(AH_EVENT_REPLACE):
            // Read (and checked) against the event by the host's own output, as in-process.
            if let text = waiter.replacement {
                _ = text.withUnsafeBufferPointer { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { out.pointee.write(out.pointee.ctx, $0.baseAddress, $0.count) }
                }
            }
            return waiter.verdict
        default:
            return fail(waiter.message)
        }
    }

    /// A one-way callback (update, reset, flush, release), in order with the others.
    fileprivate func send(_ op: IsolationWire.PluginOp, _ runnerId: UInt64, _ bytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) {
        guard state.withLock({ $0.ended == nil }) else { return }
        var w = WireWriter()
        w.begin(.plugin)
        w.u32(0)
        w.i64(Int64(bitPattern: runnerId))
        w.u8(op.rawValue)
        w.data(bytes)
        w.end()
        _ = process.send(w.bytes, deadline: monotonicSeconds() + timeout)
    }
}

/// The `ctx` of a proxied plugin: retained until its `release`.
private final class IsolatedPluginProxy {
    let owner: IsolatedPlugins
    let runnerId: UInt64
    init(owner: IsolatedPlugins, runnerId: UInt64) {
        self.owner = owner
        self.runnerId = runnerId
    }

    static func from(_ ctx: UnsafeMutableRawPointer?) -> IsolatedPluginProxy {
        Unmanaged<IsolatedPluginProxy>.fromOpaque(ctx!).takeUnretainedValue()
    }
}

private func withOptionalCString<R, E: Error>(_ text: String?, _ body: (UnsafePointer<CChar>?) throws(E) -> R) throws(E) -> R {
    guard let text else { return try body(nil) }
    var bytes = Array(text.utf8CString)
    let result: Result<R, E> = bytes.withUnsafeMutableBufferPointer { buffer in
        do throws(E) { return .success(try body(UnsafePointer(buffer.baseAddress!))) } catch { return .failure(error) }
    }
    return try result.get()
}

private func isolatedPluginProcess(_ ctx: UnsafeMutableRawPointer?, _ json: UnsafePointer<CChar>, _ length: Int,
                                   _ out: UnsafePointer<ah_event_output>, _ err: UnsafeMutablePointer<CChar>, _ cap: Int) -> Int32 {
    let proxy = IsolatedPluginProxy.from(ctx)
    return proxy.owner.process(proxy.runnerId, json, length, out, err, cap)
}

private func isolatedPluginUpdate(_ ctx: UnsafeMutableRawPointer?, _ settings: UnsafePointer<CChar>, _ length: Int, _ kind: Int32) {
    let proxy = IsolatedPluginProxy.from(ctx)
    proxy.owner.send(kind == Int32(AH_UPDATE_INITIAL) ? .updateInitial : .updateRefresh, proxy.runnerId,
                     UnsafeRawBufferPointer(start: settings, count: length))
}

private func isolatedPluginReset(_ ctx: UnsafeMutableRawPointer?) {
    let proxy = IsolatedPluginProxy.from(ctx)
    proxy.owner.send(.reset, proxy.runnerId)
}

private func isolatedPluginFlush(_ ctx: UnsafeMutableRawPointer?) {
    let proxy = IsolatedPluginProxy.from(ctx)
    proxy.owner.send(.flush, proxy.runnerId)
}

private func isolatedPluginRelease(_ ctx: UnsafeMutableRawPointer?) {
    let proxy = Unmanaged<IsolatedPluginProxy>.fromOpaque(ctx!)
    proxy.takeUnretainedValue().owner.send(.release, proxy.takeUnretainedValue().runnerId)
    proxy.release()
}
