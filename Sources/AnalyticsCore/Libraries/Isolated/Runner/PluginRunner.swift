import CAnalyticsABI
import Foundation
import Glibc

/// The child side of process isolation: what `analytics-plugin-runner` does once it has
/// restricted itself. It loads ONE library through the unchanged C ABI (the same loader and the
/// same `ah_host` table code as in the host, so the library cannot tell the difference) and serves
/// it over the protocol of `IsolationWire`: fd 3 in, fd 4 out; its standard output goes to the
/// host's standard error, so a library that prints cannot corrupt anything.
///
/// Threads: one reads frames (batches go to the work queue, replies wake the library thread that
/// made the call); the main thread runs the batches, one item at a time, in order — that is the
/// header's "[serialized]" rule. Library threads may call the host at any time; writes to fd 4 are
/// serialized by a lock.
package enum PluginRunner {
    package static let commandsFd: Int32 = 3
    package static let resultsFd: Int32 = 4
    /// The library the host opened and handed over (`RunnerFiles`); its grants follow.
    package static let libraryFd: Int32 = 6

    /// `--scan FILE`: loads the library (open at `descriptor`), reports its info (or why it cannot
    /// be used), exits.
    package static func scan(file: String, descriptor: Int32, toolchain: String) -> Int32 {
        let out = Output(fd: resultsFd)
        out.sendLoadOutcome(file: file, descriptor: descriptor, toolchain: toolchain)
        return 0
    }

    /// `--serve FILE`: loads the library (open at `descriptor`), creates one instance when asked
    /// and runs batches until the host closes the pipe (or after `destroy`).
    package static func serve(file: String, descriptor: Int32, toolchain: String) -> Int32 {
        let out = Output(fd: resultsFd)
        guard let library = out.sendLoadOutcome(file: file, descriptor: descriptor, toolchain: toolchain) else { return 0 }
        let server = Server(library: library, out: out)
        server.run()
        return 0
    }

    /// Writes frames to the host; shared by the main thread and library threads.
    final class Output: @unchecked Sendable {
        let fd: Int32
        /// Frames are written whole, one at a time. (An NSLock: ThreadSanitizer misreads the
        /// exclusivity access of a `Locked` whose value has no size as a race.)
        private let lock = NSLock()
        private let waiters = Locked<[UInt32: Waiter]>([:])
        private let nextCall = Locked<UInt32>(1)

        final class Waiter: @unchecked Sendable {
            let done = DispatchSemaphore(value: 0)
            var status: UInt8 = IsolationWire.absent
            var bytes: [UInt8] = []
            /// For a call answered later (`callLater`): run with the reply instead of waking a thread.
            var then: (@Sendable (UInt8, [UInt8]) -> Void)?
        }

        init(fd: Int32) { self.fd = fd }

        func send(_ frame: [UInt8]) {
            lock.lock()
            defer { lock.unlock() }
            // The host is gone: nothing left to serve.
            if !WireIO.writeAll(fd, frame) { _exit(0) }
        }

        func frame(_ kind: IsolationWire.Kind, _ body: (inout WireWriter) -> Void) {
            var w = WireWriter()
            w.begin(kind)
            body(&w)
            w.end()
            send(w.bytes)
        }

        @discardableResult
        func sendLoadOutcome(file: String, descriptor: Int32, toolchain: String) -> NativeLibrary? {
            // Mapped once loaded: the descriptor is of no further use, and the library never sees it.
            defer { close(descriptor) }
            do throws(PluginLoadError) {
                // The host checked the file's permissions before it started this process.
                let library = try PluginLoader(configuration: .init(allowGroupOrOtherWritable: true, hostSwiftToolchain: toolchain))
                    .load(file: file, descriptor: descriptor)
                frame(.ready) { $0.text(JSON.object(ScanRecord.encode(library.info)).serialized()) }
                return library
            } catch {
                frame(.refused) { $0.text(JSON.object(ScanRecord.encode(error)).serialized()) }
                return nil
            }
        }

        /// A host service call: without `wait`, one-way (log); else blocks for the reply.
        func call(_ function: IsolationWire.Function, _ arg: Int64 = 0, _ bytes: [UInt8] = [], wait: Bool) -> (UInt8, [UInt8]) {
            var id: UInt32 = 0
            var waiter: Waiter?
            if wait {
                id = nextCall.withLock { n in defer { n = n &+ 1 == 0 ? 1 : n &+ 1 }; return n }
                let made = Waiter()
                waiter = made
                waiters.withLock { $0[id] = made }
            }
            frame(.call) { w in
                w.u32(id)
                w.u8(function.rawValue)
                w.i64(arg)
                w.data(bytes)
            }
            guard let waiter else { return (IsolationWire.ok, []) }
            waiter.done.wait()
            return (waiter.status, waiter.bytes)
        }

        /// A host service call whose reply comes later: `then` runs with it on a thread of its own
        /// (never the reader's, which must go on reading while the library handles the answer).
        func callLater(_ function: IsolationWire.Function, _ bytes: [UInt8], then: @escaping @Sendable (UInt8, [UInt8]) -> Void) {
            let id = nextCall.withLock { n in defer { n = n &+ 1 == 0 ? 1 : n &+ 1 }; return n }
            let waiter = Waiter()
            waiter.then = then
            waiters.withLock { $0[id] = waiter }
            frame(.call) { w in
                w.u32(id)
                w.u8(function.rawValue)
                w.i64(0)
                w.data(bytes)
            }
        }

        func deliverReply(_ payload: [UInt8]) {
            var r = WireReader(payload)
            let id = r.u32()
            let status = r.u8()
            let bytes = r.data()
            guard !r.failed, let waiter = waiters.withLock({ $0.removeValue(forKey: id) }) else { return }
            if let then = waiter.then {
                // Not the global pool: this process is jailed (SideQueue says why).
                SideQueue.async("runner reply \(id)") { then(status, bytes) }
                return
            }
            waiter.status = status
            waiter.bytes = bytes
            waiter.done.signal()
        }
    }

    final class Server: @unchecked Sendable {
        let library: NativeLibrary
        let out: Output
        let work = Locked<[[UInt8]]>([])
        let available = DispatchSemaphore(value: 0)
        var instance: OpaquePointer?
        var table: HostTable?
        let errorBuffer = ErrorBuffer()
        /// The batch hook's buffer for the texts of a call (the main thread makes every call).
        let batchScratch = BatchScratch()
        private var destroyed = false
        /// The library's timeline plugins (AH_EXT_TIMELINE), called by the host through `plugin` frames.
        private let timeline: RunnerTimeline
        /// AH_EXT_SIGNALS, when the host's client has signals (made at `start`).
        private let signals = Locked<RunnerSignals?>(nil)
        /// How a hook's retryable failure is retried, in place (the host's policy, from `start`).
        var retryPolicy = NativeRetryPolicy()
        /// Where the item being called is published for the host (fd 5), if it gave a page.
        private let progress = CommandLine.arguments.contains("--progress") ? ProgressPage.mapInRunner() : nil
        /// ABI 1.3 finish-later: events whose hook answered pending, by token (main thread only),
        /// the attempt being made, and the host's hook timeout (from `start`).
        var parked: [UInt64: RunnerParkedEvent] = [:]
        var currentAttempt = 1
        /// Serials of pending calls (see `IsolationWire.Kind.completed`): the next one, the one a
        /// retry of a parked event keeps, and the final answers not yet told to the host.
        var nextSerial: UInt64 = 0
        var redeliverySerial: UInt64?
        var answeredSerials: [UInt64] = []
        var hookTimeout = 10.0
        /// The host keeps this destination's events on disk until finished (its calls past the hook
        /// timeout are called again instead of abandoned).
        var durable = false
        /// The least AH_LOG_* level the host keeps (from `start`), for `log_enabled`.
        var logThreshold: Int32 = 0

        init(library: NativeLibrary, out: Output) {
            self.library = library
            self.out = out
            self.timeline = RunnerTimeline(out: out)
        }

        func run() {
            let reader = Thread { [self] in readLoop() }
            reader.name = "runner reader"
            reader.start()
            while true {
                available.wait()
                guard let frame = work.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }  // host gone
                if frame[0] == Self.settleMarker {
                    // Answers of pending calls arrived (or one expired) while no batch ran.
                    if !destroyed, instance != nil { settleParked(beat: {}) }
                    continue
                }
                let kind = IsolationWire.Kind(rawValue: frame[0])
                let payload = Array(frame[1...])
                switch kind {
                case .start?: start(payload)
                case .batch?: runBatch(payload)
                default: break
                }
                if destroyed { return }
            }
        }

        private func readLoop() {
            while let (kind, payload) = WireIO.readFrame(PluginRunner.commandsFd) {
                if kind == .reply {
                    out.deliverReply(payload)
                } else if kind == .plugin {
                    timeline.enqueue(payload)
                } else if kind == .signal {
                    signals.withLock { $0 }?.deliver(payload)
                } else {
                    work.withLock { $0.append([kind.rawValue] + payload) }
                    available.signal()
                }
            }
            // End of input: the host closed the pipe (or died). Stop after what was queued.
            available.signal()
        }

        private func services(options: JSONObject, storageDirectory: String?) -> HostServices {
            let out = self.out
            var services = HostServices(
                log: { level, text in _ = out.call(.log, Int64(level.rawValue), Array(text.utf8), wait: false) },
                sendEvent: { bytes in
                    let (status, reply) = out.call(.sendEvent, 0, bytes, wait: true)
                    return Self.result(status, reply)
                },
                userId: {
                    let (status, reply) = out.call(.userId, wait: true)
                    return status == IsolationWire.ok ? String(decoding: reply, as: UTF8.self) : nil
                },
                anonymousId: {
                    let (status, reply) = out.call(.anonymousId, wait: true)
                    return status == IsolationWire.ok ? String(decoding: reply, as: UTF8.self) : nil
                },
                timeline: timeline,
                client: HostServices.Client(
                    traits: {
                        let (_, reply) = out.call(.traits, wait: true)
                        return (try? JSON(parsing: reply))?.objectValue ?? [:]
                    },
                    reset: { let (s, r) = out.call(.clientReset, wait: true); return Self.result(s, r) },
                    flush: { let (s, r) = out.call(.clientFlush, wait: true); return Self.result(s, r) },
                    storageDirectory: {
                        guard let storageDirectory else { return nil }
                        do {
                            try FileManager.default.createDirectory(atPath: storageDirectory, withIntermediateDirectories: true)
                            return storageDirectory
                        } catch { return nil }
                    },
                    options: { options }),
                http: HostServices.HTTP(get: HostServices.HTTP.shared.get, send: { request, answer in
                    // The host makes the request (its client, proxy and TLS settings), not this process.
                    out.callLater(.httpSend, HTTPExchangeWire.encode(request)) { status, reply in
                        answer(HTTPExchangeWire.decodeAnswer(status, reply))
                    }
                }))
            services.clients = RunnerClients.forwarding(out)
            services.key = library.key
            let least = logThreshold
            services.logEnabled = { $0.rawValue >= least }
            if let relay = signals.withLock({ $0 }) {
                let hub = relay.hub
                services.signals = { hub }
                services.signalsRelay = relay
            }
            return services
        }

        static func result(_ status: UInt8, _ reply: [UInt8]) -> NativeHookResult {
            switch status {
            case IsolationWire.ok: return .ok
            case IsolationWire.retryable: return .retryable(String(decoding: reply, as: UTF8.self))
            default: return .permanent(String(decoding: reply, as: UTF8.self))
            }
        }

        /// `start`: creates the instance with the settings the host sent.
        private func start(_ payload: [UInt8]) {
            var r = WireReader(payload)
            let text = r.data()
            let start = (try? JSON(parsing: text))?.objectValue ?? [:]
            let settings = start["settings"]?.objectValue ?? [:]
            if let configuration = start["signals"]?.objectValue {
                signals.withLock { $0 = RunnerSignals(out: out, configuration: configuration) }
            }
            if let retry = start["retry"]?.objectValue {
                retryPolicy = NativeRetryPolicy(maxAttempts: retry["maxAttempts"]?.intValue ?? 4,
                                                initialDelay: retry["initialDelay"]?.doubleValue ?? 0.1,
                                                maxDelay: retry["maxDelay"]?.doubleValue ?? 2,
                                                maxHintedDelay: retry["maxHintedDelay"]?.doubleValue ?? 30)
            }
            if let timeout = start["hookTimeout"]?.doubleValue { hookTimeout = timeout }
            durable = start["durable"]?.boolValue ?? false
            if let least = start["logThreshold"]?.intValue { logThreshold = Int32(least) }
            let table = HostTable(services(options: start["options"]?.objectValue ?? [:],
                                                   storageDirectory: start["storageDirectory"]?.stringValue))
            table.pendingCalls.onArrival { [weak self] in self?.postSettle() }
            let settingsText = settings.serializedBytes()
            errorBuffer.clear()
            let made = settingsText.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    library.create(table.table, chars.baseAddress!, chars.count, errorBuffer.base, errorBuffer.capacity)
                }
            }
            if let made {
                instance = made
                self.table = table
                out.frame(.started) { $0.u8(IsolationWire.ok); $0.text("") }
            } else {
                timeline.removeAll()
                table.instanceEnding()
                table.revoke()
                signals.withLock { $0 }?.hub.shutdown()
                let message = errorBuffer.message
                out.frame(.started) { $0.u8(IsolationWire.permanent); $0.text(message.isEmpty ? "create returned NULL without a reason" : message) }
            }
        }

        /// Runs every item in order; results go back at the end, and at least every millisecond
        /// while the batch runs (so the host knows which item is in progress).
        private func runBatch(_ payload: [UInt8]) {
            var r = WireReader(payload)
            let count = Int(r.u32())
            let sequence = UInt64(bitPattern: r.i64())
            progress?[1] = 0
            progress?[0] = sequence
            var results = WireWriter()
            var pending = 0
            var lastSent = monotonicSeconds()
            func flushResults() {
                guard pending > 0 else { return }
                var w = WireWriter()
                w.begin(.results)
                w.u32(UInt32(pending))
                w.bytes.append(contentsOf: results.bytes)
                w.end()
                out.send(w.bytes)
                results.reset()
                pending = 0
                lastSent = monotonicSeconds()
            }
            // While the runner waits for answers of pending calls, the host hears that it is alive.
            let beat = {
                flushResults()
                self.out.frame(.results) { $0.u32(0) }
            }
            // ABI 1.3 batch hook: answers of the events already handed over in one call, by index.
            var gathered: [Int: (ah_status, String)] = [:]
            for index in 0..<count {
                progress?[1] = UInt64(index)
                let op = IsolationWire.Op(rawValue: r.u8())
                let range = r.dataRange()
                if r.failed { break }
                if let op, op.isEvent, let batch = library.batch, instance != nil, !destroyed, gathered[index] == nil {
                    // The events from here on, up to the library's size, go in one call.
                    var look = r
                    var ranges = [range]
                    while ranges.count < batch.maxEvents, index + ranges.count < count {
                        let next = IsolationWire.Op(rawValue: look.u8())
                        let nextRange = look.dataRange()
                        if look.failed || next?.isEvent != true { break }
                        ranges.append(nextRange)
                    }
                    for (offset, answer) in deliverGathered(ranges.map { Array(payload[$0]) }, batch, beat: beat).enumerated() {
                        gathered[index + offset] = answer
                    }
                }
                // The host hears an event's pending result before its settlement (it checks one
                // against the other), so the results so far go first.
                if !parked.isEmpty {
                    flushResults()
                    settleParked(beat: beat)
                    if op?.isEvent == true { waitForPendingRoom(beat: beat) }
                }
                // Before destroy: the last answers, abandonments and notices.
                if op == .destroy, table?.pendingCalls.isUsed == true { flushResults(); endParked(beat: beat) }
                currentAttempt = 1
                let batched = gathered.removeValue(forKey: index)
                var (status, message) = batched ?? payload.withUnsafeBufferPointer { all -> (ah_status, String) in
                    let base = UnsafeRawPointer(all.baseAddress! + range.lowerBound).assumingMemoryBound(to: CChar.self)
                    return call(op, base, range.count)
                }
                // A retryable failure is retried here, in place, as in-process: what follows the
                // item waits for it, so the library sees its events in order. An empty results
                // frame tells the host that the wait is not the library's time. Never an
                // application event's (the header: not retried, the moment has passed).
                var attempt = 1
                while status == ah_status(AH_ERR_RETRYABLE), batched == nil, attempt < retryPolicy.maxAttempts, op != .destroy, op != .application {
                    flushResults()
                    out.frame(.results) { $0.u32(0) }
                    sleepBeating(retryPolicy.delay(afterAttempt: attempt, hint: table?.retryHint), beat: beat)
                    attempt += 1
                    currentAttempt = attempt
                    (status, message) = payload.withUnsafeBufferPointer { all -> (ah_status, String) in
                        let base = UnsafeRawPointer(all.baseAddress! + range.lowerBound).assumingMemoryBound(to: CChar.self)
                        return call(op, base, range.count)
                    }
                }

                // A flush ends when what the library holds has its answer, as in-process.
                if op == .flush, !parked.isEmpty { flushResults(); settlePending(until: monotonicSeconds() + hookTimeout * 0.8, beat: beat) }
                let code = status == ah_status(AH_OK) ? IsolationWire.ok
                    : status == Self.parkedStatus ? IsolationWire.pending
                    : status == ah_status(AH_ERR_RETRYABLE) ? IsolationWire.retryable : IsolationWire.permanent
                if let progress, index < ProgressPage.maxItems {
                    UnsafeMutableRawPointer(progress).storeBytes(of: code, toByteOffset: 16 + index, as: UInt8.self)
                }
                results.u8(code)
                if status == ah_status(AH_OK) || status == Self.parkedStatus { results.u32(0) } else {
                    let text = status == ah_status(AH_OK) || status == ah_status(AH_ERR_RETRYABLE) || status == ah_status(AH_ERR_PERMANENT)
                        ? message : "returned unknown status \(status)" + (message.isEmpty ? "" : ": \(message)")
                    results.text(text)
                }
                pending += 1
                if monotonicSeconds() - lastSent >= 0.001 { flushResults() }
            }
            flushResults()
        }

        typealias EventHook = @convention(c) (OpaquePointer, UnsafePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int) -> ah_status

        func call(_ op: IsolationWire.Op?, _ text: UnsafePointer<CChar>, _ length: Int) -> (ah_status, String) {
            let hooks = library.hooks
            guard let op else { return (ah_status(AH_ERR_PERMANENT), "unknown operation") }
            guard let instance, !destroyed else {
                return (ah_status(AH_ERR_PERMANENT), "the instance was not created")
            }
            errorBuffer.clear()
            let status: ah_status
            switch op {
            case .identify, .track, .screen, .group, .alias:
                let hook: EventHook?
                switch op {
                case .identify: hook = hooks.identify
                case .track: hook = hooks.track
                case .screen: hook = hooks.screen
                case .group: hook = hooks.group
                default: hook = hooks.alias
                }
                guard let hook else { return (ah_status(AH_OK), "") }
                if let table, table.pendingCalls.isUsed {
                    return callAllowingPending(hook, instance, op, text, length, table.pendingCalls)
                }
                status = hook(instance, text, length, errorBuffer.base, errorBuffer.capacity)
            case .updateInitial, .updateRefresh:
                guard let hook = hooks.update else { return (ah_status(AH_OK), "") }
                let kind = Int32(op == .updateInitial ? AH_UPDATE_INITIAL : AH_UPDATE_REFRESH)
                status = hook(instance, text, length, kind, errorBuffer.base, errorBuffer.capacity)
            case .reset:
                guard let hook = hooks.reset else { return (ah_status(AH_OK), "") }
                status = hook(instance, errorBuffer.base, errorBuffer.capacity)
            case .flush:
                // What the host forwarded before the flush reaches the library's subscribers first.
                _ = signals.withLock({ $0 })?.hub.flush(timeout: 5)
                guard let hook = hooks.flush else { return (ah_status(AH_OK), "") }
                status = hook(instance, errorBuffer.base, errorBuffer.capacity)
            case .lifecycleStarted, .lifecycleStopping:
                guard let hook = hooks.lifecycle else { return (ah_status(AH_OK), "") }
                let phase = Int32(op == .lifecycleStarted ? AH_LIFECYCLE_STARTED : AH_LIFECYCLE_STOPPING)
                status = hook(instance, phase, errorBuffer.base, errorBuffer.capacity)
            case .application:
                // A library without the table never hears application events, as in-process.
                guard let hook = library.application?.hook else { return (ah_status(AH_OK), "") }
                guard length >= 4 else { return (ah_status(AH_ERR_PERMANENT), "malformed application event") }
                let kind = Int32(bitPattern: UInt32(littleEndian: UnsafeRawPointer(text).loadUnaligned(as: UInt32.self)))
                status = hook(instance, kind, text + 4, length - 4, errorBuffer.base, errorBuffer.capacity)
            case .destroy:
                destroyed = true
                timeline.removeAll()
                table?.instanceEnding()
                hooks.destroy?(instance)
                table?.revoke()
                signals.withLock { $0 }?.hub.shutdown()
                self.instance = nil
                return (ah_status(AH_OK), "")
            }
            if status == ah_status(AH_OK) { return (status, "") }
            let message = errorBuffer.message
            return (status, message.isEmpty ? "\(op.hookName) failed without a reason" : message)
        }
    }
}
