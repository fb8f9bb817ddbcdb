import CAnalyticsABI

/// The `ah_host` table handed to `create`: plain C function pointers (which cannot capture) plus an
/// opaque context that leads back to this object and its Swift closures.
///
/// The table and its context are never freed (`HostTable.Handle`): after the instance's
/// `destroy` (or its abandonment) `revoke()` turns every call into a harmless no-op.
final class HostTable: @unchecked Sendable {
    let services: HostServices
    let table: UnsafeMutablePointer<ah_host>
    private var handle: HostTable.Handle!
    /// AH_EXT_HTTP_REQUESTS: the requests this instance started that have not completed.
    let httpRequestsInFlight: HTTPRequestsInFlight
    /// AH_EXT_FINISH_LATER: this instance's calls that answered pending.
    let pendingCalls: PendingCalls
    /// AH_EXT_RETRY_AFTER: how long this instance's next retry waits at least.
    let retryHint = RetryHint()

    init(_ services: HostServices) {
        self.services = services
        httpRequestsInFlight = HTTPRequestsInFlight(key: services.key)
        pendingCalls = PendingCalls(log: services.log)
        table = .allocate(capacity: 1)
        table.initialize(to: ah_host(
            size: UInt32(MemoryLayout<ah_host>.size),
            abi_version: ABIVersion.host.raw,
            ctx: nil,
            log: hostLog,
            send_event: hostSendEvent,
            user_id: hostUserId,
            anonymous_id: hostAnonymousId,
            get_extension: hostGetExtension))
        handle = HostTable.Handle(table: table, live: self)
        table.pointee.ctx = handle.retainedForever()
    }

    /// AH_EXT_SIGNALS for this instance, made when the application enabled signals.
    lazy var signalsTable: HostSignalsTable? = services.signals() == nil
        ? nil : HostSignalsTable(signals: services.signals, key: services.key, relay: services.signalsRelay)
    private let extensionLock = Lock()

    /// The signals table, or nil when this host does not offer it to this instance.
    func signalsCapability() -> UnsafeRawPointer? {
        extensionLock.withLock { signalsTable.map { UnsafeRawPointer($0.table) } }
    }

    /// The instance is about to be destroyed (or its `create` failed): remove what it added.
    func instanceEnding() {
        extensionLock.withLock { signalsTable }?.removeAll()
        httpRequestsInFlight.cancelAll()
        _ = pendingCalls.end()
        retryHint.end()
    }

    /// The services behind a table's `ctx`; nil once revoked (`function` names the late call).
    static func from(_ ctx: UnsafeMutableRawPointer?, _ function: StaticString) -> HostTable? {
        guard let ctx else { return nil }
        return HostTable.Handle.from(ctx).live(function)
    }

    /// The instance is gone: later calls through its table do nothing and answer an error.
    func revoke() { handle.revoke() }

    /// snprintf-like copy of an id into a library's buffer; -1 when there is none.
    static func copy(_ id: String?, into buf: UnsafeMutablePointer<CChar>?, capacity: Int) -> Int64 {
        guard var id else {
            if let buf, capacity > 0 { buf[0] = 0 }
            return -1
        }
        return id.withUTF8 { utf8 in
            if let buf, capacity > 0 {
                let n = min(utf8.count, capacity - 1)
                if n > 0 { UnsafeMutableRawPointer(buf).copyMemory(from: utf8.baseAddress!, byteCount: n) }
                buf[n] = 0
            }
            return Int64(utf8.count)
        }
    }
}

private func hostLog(_ ctx: UnsafeMutableRawPointer?, _ level: Int32, _ text: UnsafePointer<CChar>?, _ length: Int) {
    guard let box = HostTable.from(ctx, "log") else { return }
    let message = text.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: max(0, length)), as: UTF8.self) } ?? ""
    box.services.log(NativeLogLevel(rawValue: level) ?? .info, message)
}

private func hostSendEvent(_ ctx: UnsafeMutableRawPointer?, _ json: UnsafePointer<CChar>?, _ length: Int) -> ah_status {
    guard let box = HostTable.from(ctx, "send_event") else { return ah_status(AH_ERR_PERMANENT) }
    guard let json, length > 0 else { return ah_status(AH_ERR_PERMANENT) }
    let bytes = [UInt8](UnsafeRawBufferPointer(start: json, count: length))
    switch box.services.sendEvent(bytes) {
    case .ok: return ah_status(AH_OK)
    case .retryable: return ah_status(AH_ERR_RETRYABLE)
    case .permanent: return ah_status(AH_ERR_PERMANENT)
    }
}

/// ABI 1.2 capability lookup: the tables in `HostExtensions` (and AH_EXT_SIGNALS, per instance),
/// NULL for an id this host (or this instance's services) does not offer.
private func hostGetExtension(_ ctx: UnsafeMutableRawPointer?, _ id: UnsafePointer<CChar>) -> UnsafeRawPointer? {
    guard let box = HostTable.from(ctx, "get_extension") else { return nil }
    let name = String(cString: id)
    if name == AH_EXT_SIGNALS { return box.signalsCapability() }
    if name == AH_EXT_FINISH_LATER { box.pendingCalls.markUsed() }
    return HostExtensions.lookup(box.services, id: id)
}

private func hostUserId(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int64 {
    HostTable.copy(HostTable.from(ctx, "user_id")?.services.userId(), into: buf, capacity: capacity)
}

private func hostAnonymousId(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int64 {
    HostTable.copy(HostTable.from(ctx, "anonymous_id")?.services.anonymousId(), into: buf, capacity: capacity)
}

extension HostTable {
    /// The part of an `ah_host` that outlives its instance: the C table itself and the context its
    /// `ctx` points to. A library may (by mistake) keep the table and call it after `destroy`, from a
    /// thread it forgot to stop; those calls must find valid memory, so neither is ever freed. Once
    /// the instance is gone the handle is revoked: every call is then a harmless no-op that answers an
    /// error (`send_event` AH_ERR_PERMANENT, ids -1, `get_extension` NULL) and the first one is logged
    /// as the library bug it is.
    ///
    /// Cost of never freeing: this object and one `ah_host` (well under 200 bytes) per instance ever
    /// created, which is bounded by the settings' destination changes of a run.
    final class Handle: Sendable {
        /// Never deallocated (see above).
        nonisolated(unsafe) let table: UnsafeMutablePointer<ah_host>
        private let state: Locked<State>
        private struct State {
            var live: HostTable?
            /// Kept after revocation to report the first late call.
            var log: (@Sendable (NativeLogLevel, String) -> Void)?
            var reportedLateCall = false
        }

        init(table: UnsafeMutablePointer<ah_host>, live: HostTable) {
            self.table = table
            state = Locked(State(live: live, log: live.services.log))
        }

        /// The context stored in `ah_host.ctx`: this handle, retained for ever.
        func retainedForever() -> UnsafeMutableRawPointer {
            Unmanaged.passRetained(self).toOpaque()
        }

        static func from(_ ctx: UnsafeMutableRawPointer) -> HostTable.Handle {
            Unmanaged<HostTable.Handle>.fromOpaque(ctx).takeUnretainedValue()
        }

        /// The services while the instance lives; nil (and the first such call logged) afterwards.
        func live(_ function: StaticString) -> HostTable? {
            let (live, log) = state.withLock { s -> (HostTable?, (@Sendable (NativeLogLevel, String) -> Void)?) in
                if let live = s.live { return (live, nil) }
                if s.reportedLateCall { return (nil, nil) }
                s.reportedLateCall = true
                return (nil, s.log)
            }
            log?(.error, "called the host (\(function)) after its instance was destroyed or abandoned; ignored (a library bug: stop your threads in destroy)")
            return live
        }

        /// Ends the services: later calls through the table are no-ops. Idempotent.
        func revoke() {
            state.withLock { $0.live = nil }
        }
    }
}
