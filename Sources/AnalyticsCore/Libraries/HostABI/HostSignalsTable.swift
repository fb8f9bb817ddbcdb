import CAnalyticsABI

/// The `ah_host_signals` table (AH_EXT_SIGNALS) one instance sees: emit, subscribe, hold/ready,
/// unsubscribe, configuration. Its functions take the `ah_host` ctx, which leads to the
/// instance's `HostServicesTable` and from there to this object. It remembers the subscribers
/// the instance made, so that they are removed before the instance's `destroy`.
final class HostSignalsTable: @unchecked Sendable {
    /// The C table: one for the process, never freed (its functions find the instance through
    /// ctx, so a library that keeps it past `destroy` calls harmless no-ops).
    var table: UnsafePointer<ah_host_signals> { HostSignalsTable.shared }
    nonisolated(unsafe) static let shared: UnsafePointer<ah_host_signals> = {
        let pointer = UnsafeMutablePointer<ah_host_signals>.allocate(capacity: 1)
        pointer.initialize(to: ah_host_signals(
            size: UInt32(MemoryLayout<ah_host_signals>.size),
            emit: hostSignalsEmit, subscribe: hostSignalsSubscribe, set_ready: hostSignalsSetReady,
            unsubscribe: hostSignalsUnsubscribe, configuration: hostSignalsConfiguration))
        return UnsafePointer(pointer)
    }()
    private let signals: @Sendable () -> Signals?
    private let key: String
    private let owned = Locked<Set<UInt64>>([])
    /// In `analytics-plugin-runner`: where emit and the configuration go (the host), while
    /// `signals` is the runner's own hub that the host feeds for the library's subscribers.
    private let relay: (any SignalsRelay)?

    init(signals: @escaping @Sendable () -> Signals?, key: String, relay: (any SignalsRelay)? = nil) {
        self.signals = signals
        self.key = key
        self.relay = relay
    }

    /// Removes every subscriber the instance made (before its `destroy`, or when `create` failed).
    func removeAll() {
        let ids = owned.withLock { ids -> Set<UInt64> in defer { ids.removeAll() }; return ids }
        guard let s = signals() else { return }
        for id in ids { s.unsubscribe(id) }
    }

    static func of(_ ctx: UnsafeMutableRawPointer?) -> HostSignalsTable? {
        HostServicesTable.from(ctx, "signals")?.signalsTable
    }

    fileprivate func emit(_ bytes: UnsafeRawBufferPointer) -> Result<Void, TableError> {
        if let relay { return relay.emit([UInt8](bytes)) }
        return Self.emit(bytes, into: signals())
    }

    /// Checks and emits a signal given as JSON text (the host's side of `emit`, for a library in
    /// this process or in a runner).
    static func emit(_ bytes: UnsafeRawBufferPointer, into signals: Signals?) -> Result<Void, TableError> {
        guard let s = signals else { return .failure(TableError(ah_status(AH_ERR_RETRYABLE), "signals are stopped")) }
        let value: JSON
        do { value = try JSON(parsing: [UInt8](bytes)) } catch { return .failure(TableError(ah_status(AH_ERR_PERMANENT), "\(error)")) }
        guard case .object(let o) = value else { return .failure(TableError(ah_status(AH_ERR_PERMANENT), "a signal must be a JSON object, found \(JSON.kindName(value))")) }
        do {
            guard try s.emit(json: o) != nil else { return .failure(TableError(ah_status(AH_ERR_RETRYABLE), "signals are stopping")) }
            return .success(())
        } catch {
            return .failure(TableError(ah_status(AH_ERR_PERMANENT), error.description))
        }
    }

    fileprivate func subscribe(_ sub: ah_signal_subscriber) -> Result<UInt64, TableError> {
        guard let s = signals() else { return .failure(TableError(ah_status(AH_ERR_RETRYABLE), "signals are stopped")) }
        guard let deliver = sub.deliver else { return .failure(TableError(ah_status(AH_ERR_PERMANENT), "ah_signal_subscriber.deliver is NULL")) }
        let ctx = UInt(bitPattern: sub.ctx)
        let release = sub.release
        let name = sub.name.map { String(cString: $0) } ?? key
        let held = sub.flags & UInt32(AH_SIGNALS_START_HELD) != 0
        var releaseClosure: (@Sendable () -> Void)?
        if let release {
            releaseClosure = { release(UnsafeMutableRawPointer(bitPattern: ctx)) }
        }
        let forward: @Sendable ([UInt8], Signal) -> Void = { json, _ in
            json.withUnsafeBytes { raw in
                let chars = raw.bindMemory(to: CChar.self)
                deliver(UnsafeMutableRawPointer(bitPattern: ctx), chars.baseAddress!, chars.count)
            }
        }
        let id = s.subscribe(name: name, ready: !held, release: releaseClosure, forward)
        guard let id else { return .failure(TableError(ah_status(AH_ERR_RETRYABLE), "signals are stopping")) }
        owned.withLock { _ = $0.insert(id) }
        relay?.subscribed()
        return .success(id)
    }

    fileprivate func setReady(_ id: UInt64, _ ready: Bool) -> ah_status {
        guard owned.withLock({ $0.contains(id) }), let s = signals() else { return ah_status(AH_ERR_PERMANENT) }
        s.setReady(id, ready)
        return ah_status(AH_OK)
    }

    fileprivate func unsubscribe(_ id: UInt64) -> ah_status {
        guard owned.withLock({ $0.remove(id) != nil }) else { return ah_status(AH_ERR_PERMANENT) }
        signals()?.unsubscribe(id)
        return ah_status(AH_OK)
    }

    fileprivate func configurationText() -> String? {
        if let relay { return relay.configurationText() }
        return Self.configurationText(of: signals())
    }

    static func configurationText(of signals: Signals?) -> String? {
        guard let c = signals?.currentConfiguration else { return nil }
        let o: JSONObject = [
            "maximumBufferSize": .number(Double(c.maximumBufferSize)), "relayCount": .number(Double(c.relayCount)),
            "relayInterval": .number(c.relayInterval), "debugMode": .bool(c.debugMode),
        ]
        return o.serialized()
    }
}

/// The host behind a runner's signals table: emit and the configuration cross to it; the first
/// subscription asks it to forward every signal to the runner's hub.
protocol SignalsRelay: Sendable {
    func emit(_ json: [UInt8]) -> Result<Void, TableError>
    func configurationText() -> String?
    func subscribed()
}

struct TableError: Error {
    var status: ah_status
    var message: String
    init(_ status: ah_status, _ message: String) { self.status = status; self.message = message }
}

private func writeError(_ text: String, _ err: UnsafeMutablePointer<CChar>?, _ cap: Int) {
    _ = HostServicesTable.copy(text, into: err, capacity: cap)
}

private func hostSignalsEmit(_ ctx: UnsafeMutableRawPointer?, _ json: UnsafePointer<CChar>?, _ length: Int,
                             _ err: UnsafeMutablePointer<CChar>?, _ cap: Int) -> ah_status {
    guard let t = HostSignalsTable.of(ctx) else { return ah_status(AH_ERR_PERMANENT) }
    guard let json, length > 0 else { writeError("empty signal", err, cap); return ah_status(AH_ERR_PERMANENT) }
    switch t.emit(UnsafeRawBufferPointer(start: json, count: length)) {
    case .success: return ah_status(AH_OK)
    case .failure(let e): writeError(e.message, err, cap); return e.status
    }
}

private func hostSignalsSubscribe(_ ctx: UnsafeMutableRawPointer?, _ sub: UnsafePointer<ah_signal_subscriber>,
                                  _ outId: UnsafeMutablePointer<UInt64>, _ err: UnsafeMutablePointer<CChar>?, _ cap: Int) -> ah_status {
    guard let t = HostSignalsTable.of(ctx) else { return ah_status(AH_ERR_PERMANENT) }
    // Fields beyond the library's `size` read as zero (a shorter, older struct).
    var copy = ah_signal_subscriber()
    let n = min(Int(sub.pointee.size), MemoryLayout<ah_signal_subscriber>.size)
    withUnsafeMutableBytes(of: &copy) { $0.copyMemory(from: UnsafeRawBufferPointer(start: sub, count: n)) }
    switch t.subscribe(copy) {
    case .success(let id): outId.pointee = id; return ah_status(AH_OK)
    case .failure(let e): writeError(e.message, err, cap); return e.status
    }
}

private func hostSignalsSetReady(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64, _ ready: Int32) -> ah_status {
    HostSignalsTable.of(ctx)?.setReady(id, ready != 0) ?? ah_status(AH_ERR_PERMANENT)
}

private func hostSignalsUnsubscribe(_ ctx: UnsafeMutableRawPointer?, _ id: UInt64) -> ah_status {
    HostSignalsTable.of(ctx)?.unsubscribe(id) ?? ah_status(AH_ERR_PERMANENT)
}

private func hostSignalsConfiguration(_ ctx: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<CChar>?, _ cap: Int) -> Int64 {
    HostServicesTable.copy(HostSignalsTable.of(ctx)?.configurationText(), into: buf, capacity: cap)
}
