import CAnalyticsABI
import Foundation

/// `AH_EXT_TIMELINE` inside `analytics-plugin-runner`: the library's plugins stay here (their
/// callbacks and `ctx` never leave the process); `add` and `remove` are forwarded to the host,
/// which puts a proxy on its timeline (``IsolatedPlugins``) and sends every callback back as a
/// `plugin` frame. Those run here on one plugin thread, in the order they were sent, so calls of
/// a plugin never overlap (`AH_PLUGIN_THREAD_SAFE` plugins are called one at a time too).
final class RunnerTimeline: NativeTimelineService, @unchecked Sendable {
    private let out: PluginRunner.Output
    private let state = Locked(State())
    private let work = Locked<[[UInt8]]>([])
    private let available = DispatchSemaphore(value: 0)

    private struct State {
        var plugins: [UInt64: Entry] = [:]
        var nextId: UInt64 = 1
        var closed = false
    }

    private final class Entry: @unchecked Sendable {
        let callbacks: ah_timeline_plugin
        /// Set when removed: no call starts after that (the host stops calling, too).
        var removed = false
        init(_ callbacks: ah_timeline_plugin) { self.callbacks = callbacks }
    }

    init(out: PluginRunner.Output) {
        self.out = out
        let thread = Thread { [self] in run() }
        thread.name = "runner plugins"
        thread.start()
    }

    // MARK: NativeTimelineService

    func add(_ description: ah_timeline_plugin) throws(NativePluginRegistry.AddError) -> UInt64 {
        var summary: JSONObject = ["type": .number(Double(description.type)), "flags": .number(Double(description.flags))]
        if let name = description.name {
            guard let text = String(validatingCString: name) else { throw .invalid("name is empty or not valid UTF-8") }
            summary["name"] = .string(text)
        }
        if let destination = description.destination {
            guard let text = String(validatingCString: destination) else { throw .invalid("destination is empty or not valid UTF-8") }
            summary["destination"] = .string(text)
        }
        summary["process"] = .bool(description.process != nil)
        summary["update"] = .bool(description.update != nil)
        summary["reset"] = .bool(description.reset != nil)
        summary["flush"] = .bool(description.flush != nil)
        var callbacks = description
        callbacks.name = nil
        callbacks.destination = nil
        let entry = Entry(callbacks)
        let id = state.withLock { s -> UInt64? in
            guard !s.closed else { return nil }
            defer { s.nextId += 1 }
            s.plugins[s.nextId] = entry
            return s.nextId
        }
        guard let id else { throw .stopping("the instance is being destroyed") }
        // In place before the host hears of it: the host may call `update` before answering.
        let (status, reply) = out.call(.timelineAdd, Int64(bitPattern: id), JSON.object(summary).serializedBytes(), wait: true)
        if status == IsolationWire.ok { return id }
        _ = state.withLock { $0.plugins.removeValue(forKey: id) }
        let why = String(decoding: reply, as: UTF8.self)
        throw status == IsolationWire.retryable ? .stopping(why) : .invalid(why)
    }

    func remove(id: UInt64) -> Bool {
        let entry = state.withLock { s -> Entry? in
            guard let e = s.plugins[id], !e.removed else { return nil }
            e.removed = true
            return e
        }
        guard entry != nil else { return false }
        // The host takes it off its timeline and sends `release` once its call in progress ended.
        _ = out.call(.timelineRemove, Int64(bitPattern: id), wait: true)
        return true
    }

    func removeAll() {
        let ids = state.withLock { s -> [UInt64] in
            s.closed = true
            let open = s.plugins.filter { !$0.value.removed }.map(\.key).sorted()
            for id in open { s.plugins[id]?.removed = true }
            return open
        }
        for id in ids { _ = out.call(.timelineRemove, Int64(bitPattern: id), wait: true) }
        // After what the plugin thread already holds: release what the host has not released yet.
        let done = DispatchSemaphore(value: 0)
        submit { [self] in
            let left = state.withLock { s -> [Entry] in defer { s.plugins.removeAll() }; return Array(s.plugins.values) }
            for entry in left { entry.callbacks.release?(entry.callbacks.ctx) }
            done.signal()
        }
        done.wait()
    }

    /// The host reports refusals itself (it knows the client's error handler).
    func report(_ message: String) {}

    // MARK: The plugin thread

    /// A `plugin` frame from the host.
    func enqueue(_ payload: [UInt8]) {
        work.withLock { $0.append(payload) }
        available.signal()
    }

    private let jobs = Locked<[@Sendable () -> Void]>([])

    private func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        work.withLock { $0.append([]) }
        available.signal()
    }

    private func run() {
        while true {
            available.wait()
            guard let payload = work.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            if payload.isEmpty {
                if let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { job() }
                continue
            }
            handle(payload)
        }
    }

    private func handle(_ payload: [UInt8]) {
        var r = WireReader(payload)
        let callId = r.u32()
        let id = UInt64(bitPattern: r.i64())
        let op = IsolationWire.PluginOp(rawValue: r.u8())
        let range = r.dataRange()
        guard !r.failed, let op else { return }
        let entry = state.withLock { $0.plugins[id] }
        if op == .release {
            guard let entry, state.withLock({ $0.plugins.removeValue(forKey: id) }) != nil else { return }
            entry.callbacks.release?(entry.callbacks.ctx)
            return
        }
        let callbacks = entry.flatMap { $0.removed ? nil : $0.callbacks }
        payload.withUnsafeBufferPointer { all in
            let text = UnsafeRawPointer(all.baseAddress! + range.lowerBound).assumingMemoryBound(to: CChar.self)
            switch op {
            case .process:
                guard let callbacks, let process = callbacks.process else {
                    answer(callId, Int32(AH_EVENT_KEEP), replacement: nil, message: "")
                    return
                }
                runProcess(callbacks, process, text, range.count, callId)
            case .updateInitial, .updateRefresh:
                callbacks?.update?(callbacks?.ctx, text, range.count, Int32(op == .updateInitial ? AH_UPDATE_INITIAL : AH_UPDATE_REFRESH))
            case .reset: callbacks?.reset?(callbacks?.ctx)
            case .flush: callbacks?.flush?(callbacks?.ctx)
            case .release: break
            }
        }
    }

    typealias Process = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>, Int, UnsafePointer<ah_event_output>,
                                        UnsafeMutablePointer<CChar>, Int) -> Int32

    private func runProcess(_ callbacks: ah_timeline_plugin, _ process: Process, _ text: UnsafePointer<CChar>, _ length: Int, _ callId: UInt32) {
        let output = RunnerEventOutput()
        let capacity = NativeTimelinePlugin.errorCapacity
        let verdict = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity + 1) { err -> (Int32, String) in
            err[0] = 0
            err[capacity] = 0
            var out = ah_event_output(ctx: Unmanaged.passUnretained(output).toOpaque(), write: runnerEventOutputWrite)
            let verdict = process(callbacks.ctx, text, length, &out, err.baseAddress!, capacity)
            let known = verdict == Int32(AH_EVENT_KEEP) || verdict == Int32(AH_EVENT_DROP) || verdict == Int32(AH_EVENT_REPLACE)
            return (verdict, known ? "" : String(cString: err.baseAddress!))
        }
        answer(callId, verdict.0, replacement: verdict.0 == Int32(AH_EVENT_REPLACE) ? output.written : nil, message: verdict.1)
    }

    private func answer(_ callId: UInt32, _ verdict: Int32, replacement: [UInt8]?, message: String) {
        out.frame(.verdict) { w in
            w.u32(callId)
            w.u32(UInt32(bitPattern: verdict))
            w.u8(replacement == nil ? 0 : 1)
            if let replacement { w.data(replacement) } else { w.text(message) }
        }
    }
}

/// What a plugin wrote through its `ah_event_output` in the runner: the last text, checked here
/// exactly as the host checks it (the library gets the same status), and read again by the host
/// against the event (so a refused one is reported there with the same reason).
private final class RunnerEventOutput {
    var written: [UInt8]?
    var check = NativeEventOutput(original: [:])
}

private func runnerEventOutputWrite(_ ctx: UnsafeMutableRawPointer?, _ json: UnsafePointer<CChar>?, _ length: Int) -> ah_status {
    guard let ctx else { return ah_status(AH_ERR_PERMANENT) }
    let output = Unmanaged<RunnerEventOutput>.fromOpaque(ctx).takeUnretainedValue()
    output.written = json.map { Array(UnsafeRawBufferPointer(start: $0, count: max(0, length))) } ?? []
    return withUnsafeMutablePointer(to: &output.check) { nativeEventOutputWrite(UnsafeMutableRawPointer($0), json, length) }
}
