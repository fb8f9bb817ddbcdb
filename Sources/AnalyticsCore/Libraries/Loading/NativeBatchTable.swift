import CAnalyticsABI

/// A library's `AH_EXT_BATCH` table (ABI 1.3: many events per call), read once at load time
/// within the size the library declared.
struct NativeBatchTable: Sendable {
    typealias Hook = @convention(c) (OpaquePointer, UnsafePointer<ah_event_ref>, Int, UnsafeMutablePointer<ah_status>,
                                     UnsafeMutablePointer<CChar>, Int) -> ah_status

    let hook: Hook
    /// Events per call: the library's wish, bounded by the host.
    let maxEvents: Int

    static let hostMaxEvents = 1000

    /// The table of a library, nil when it offers none (or leaves `events` NULL). A table shorter
    /// than its /1 layout is refused like any malformed struct (the library is not loaded).
    static func lookup(_ getExtension: (@convention(c) (UnsafePointer<CChar>) -> UnsafeRawPointer?)?,
                       key: String, file: String) throws(PluginLoadError) -> NativeBatchTable? {
        guard let getExtension, let table = getExtension(AH_EXT_BATCH) else { return nil }
        let raw = UnsafeRawPointer(table)
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= MemoryLayout<ah_batch>.size else {
            throw PluginLoadError(file: file, reason: .invalidIntegration(
                "ah_batch.size of \"\(key)\" is \(size) bytes, smaller than the \(AH_EXT_BATCH) layout (\(MemoryLayout<ah_batch>.size) bytes)"))
        }
        let copy = ABINegotiation.copyPrefix(of: raw, declaredSize: size, into: ah_batch())
        guard let hook = copy.events else { return nil }
        let wanted = Int(copy.max_events)
        return NativeBatchTable(hook: hook, maxEvents: wanted == 0 ? hostMaxEvents : min(wanted, hostMaxEvents))
    }

    /// Calls the hook with `events` (their JSON texts), returning one result per event. The texts
    /// are laid end to end in one buffer for the call (one copy, and every pointer stays valid).
    func call(_ instance: OpaquePointer, _ events: [[UInt8]], errorBuffer: ErrorBuffer) -> [NativeHookResult] {
        let count = events.count
        guard count > 0 else { return [] }
        var joined = [UInt8]()
        joined.reserveCapacity(events.reduce(0) { $0 + $1.count })
        var spans: [(Int, Int)] = []
        spans.reserveCapacity(count)
        for e in events {
            spans.append((joined.count, e.count))
            joined.append(contentsOf: e)
        }
        var statuses = [ah_status](repeating: ah_status(AH_OK), count: count)
        errorBuffer.clear()
        let status = joined.withUnsafeBufferPointer { all -> ah_status in
            let base = UnsafeRawPointer(all.baseAddress!).assumingMemoryBound(to: CChar.self)
            let refs = spans.map { ah_event_ref(json: base + $0.0, json_len: $0.1) }
            return refs.withUnsafeBufferPointer { r in
                statuses.withUnsafeMutableBufferPointer { s in hook(instance, r.baseAddress!, count, s.baseAddress!, errorBuffer.base, errorBuffer.capacity) }
            }
        }
        let message = errorBuffer.message
        if status != ah_status(AH_OK) {
            let one = status == ah_status(AH_PENDING)
                ? NativeHookResult.permanent("events answered AH_PENDING (a batch call cannot finish later)")
                : NativeHookResult(status: status, message: message, hook: "events")
            return Array(repeating: one, count: count)
        }
        return statuses.map { s in
            s == ah_status(AH_PENDING) ? .permanent("events set AH_PENDING for an event (a batch call cannot finish later)")
                : NativeHookResult(status: s, message: message, hook: "events")
        }
    }
}
