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
    /// are laid end to end in `scratch` for the call (every pointer stays valid).
    func call(_ instance: OpaquePointer, _ events: [[UInt8]], errorBuffer: ErrorBuffer, scratch: BatchScratch) -> [NativeHookResult] {
        let count = events.count
        guard count > 0 else { return [] }
        let joined = scratch.bytes(events.reduce(0) { $0 + $1.count })
        let base = UnsafePointer(joined.assumingMemoryBound(to: CChar.self))
        return withUnsafeTemporaryAllocation(of: ah_event_ref.self, capacity: count) { refs in
            var at = 0
            for (i, text) in events.enumerated() {
                text.withUnsafeBytes { if !$0.isEmpty { (joined + at).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
                (refs.baseAddress! + i).initialize(to: ah_event_ref(json: base + at, json_len: text.count))
                at += text.count
            }
            return call(instance, refs.baseAddress!, count, errorBuffer: errorBuffer) ?? Array(repeating: .ok, count: count)
        }
    }

    /// Calls the hook with the events of `run`: nil when every event is OK, else one result per event.
    func call(_ instance: OpaquePointer, run: borrowing BatchRun, errorBuffer: ErrorBuffer) -> [NativeHookResult]? {
        let count = run.count
        guard count > 0 else { return nil }
        return run.texts.withUnsafeBytes { texts in
            let base = texts.baseAddress.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
            return withUnsafeTemporaryAllocation(of: ah_event_ref.self, capacity: count) { refs in
                for (i, item) in run.items.enumerated() {
                    // An empty run text (no bytes at all) still needs a valid pointer.
                    (refs.baseAddress! + i).initialize(to: ah_event_ref(json: base.map { $0 + item.start } ?? UnsafePointer(bitPattern: 1)!,
                                                                        json_len: item.count))
                }
                return call(instance, refs.baseAddress!, count, errorBuffer: errorBuffer)
            }
        }
    }

    /// The call itself, for `count` events at `refs`: nil when every event is OK. The statuses live
    /// on the stack (a worker that keeps up hands over small runs: a call of a few events must cost
    /// little more than a single-event hook).
    private func call(_ instance: OpaquePointer, _ refs: UnsafePointer<ah_event_ref>, _ count: Int,
                      errorBuffer: ErrorBuffer) -> [NativeHookResult]? {
        errorBuffer.clear()
        return withUnsafeTemporaryAllocation(of: ah_status.self, capacity: count) { statuses in
            statuses.initialize(repeating: ah_status(AH_OK))
            let status = hook(instance, refs, count, statuses.baseAddress!, errorBuffer.base, errorBuffer.capacity)
            if status != ah_status(AH_OK) {
                let one = status == ah_status(AH_PENDING)
                    ? NativeHookResult.permanent("events answered AH_PENDING (a batch call cannot finish later)")
                    : NativeHookResult(status: status, message: errorBuffer.message, hook: "events")
                return Array(repeating: one, count: count)
            }
            if statuses.allSatisfy({ $0 == ah_status(AH_OK) }) { return nil }
            let message = errorBuffer.message
            return statuses.map { s in
                s == ah_status(AH_PENDING) ? .permanent("events set AH_PENDING for an event (a batch call cannot finish later)")
                    : NativeHookResult(status: s, message: message, hook: "events")
            }
        }
    }
}

/// Where a batch call lays its events' texts end to end (in the runner): kept from call to call by
/// the one thread that makes the calls, so that a call neither allocates nor faults in fresh pages.
final class BatchScratch: @unchecked Sendable {
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0

    init() {}

    deinit { base?.deallocate() }

    /// At least `count` bytes (valid until the next call).
    func bytes(_ count: Int) -> UnsafeMutableRawPointer {
        if let base, count <= capacity { return base }
        base?.deallocate()
        capacity = max(count, 2 * capacity, 4096)
        let made = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        base = made
        return made
    }
}
