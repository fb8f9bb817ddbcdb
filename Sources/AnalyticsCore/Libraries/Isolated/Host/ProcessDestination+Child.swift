import CAnalyticsABI
import Foundation
import Glibc

extension ProcessDestination {
    // MARK: Starting a runner and reading its frames

    enum StartOutcome {
        case started(replay: [Item])
        case failed(status: Int32, during: String)
        case refused(String)

        var isStarted: Bool { if case .started = self { return true }; return false }
    }

    /// Spawns a runner, waits for it to load the library and create the instance; a restarted one
    /// first hears the initial update and lifecycle(started) again (the library cannot tell), and
    /// no application event from before the crash: like an instance a refresh creates in-process,
    /// it hears only lifecycle(started). Those not yet answered are sent again with the rest.
    func startChild(timeout: Double) -> StartOutcome {
        let process: RunnerProcess
        do throws(RunnerProcess.SpawnError) {
            var arguments = ["--serve", info.file] + memoryLimitArguments()
            arguments += ["--toolchain", SwiftToolchain.current]
            if progress != nil { arguments.append("--progress") }
            process = try RunnerProcess.spawn(runner: runner, arguments: arguments, progress: progress)
        } catch {
            return .refused("cannot start \(PluginRunnerLocator.executableName): \(error)")
        }
        let (hookTimeout, analytics) = client.withLock { ($0.hookTimeout, $0.analytics.value) }
        let plugins = IsolatedPlugins(key: key, analytics: analytics, process: process, timeout: hookTimeout) { [weak process] in process?.kill() }
        let signals = IsolatedSignals(signals: analytics?.signals, process: process, key: key, timeout: hookTimeout)
        func fail(_ during: String) -> StartOutcome {
            process.kill()  // a dead child keeps its status; a live one that stopped answering ends
            let status = process.wait()
            signals.end()
            plugins.end("its process \(RunnerProcess.describe(status: status)) while \(during)")
            return .failed(status: status, during: during)
        }
        // Starting a process and loading the library is not a hook call: at least 5 s for it
        // (and for `create`), however short the per-call deadline is.
        let deadline = monotonicSeconds() + max(timeout, 5)
        guard process.readable(until: deadline), let (kind, payload) = process.readFrame() else { return fail("loading the library") }
        if kind == .refused {
            var r = WireReader(payload)
            let text = r.text()
            process.wait()
            if let o = (try? JSON(parsing: text))?.objectValue, case .failure(let error)? = ScanRecord.decode(o) {
                return .refused("could not be created: \(error.reasonText)")
            }
            return .refused("could not be created: the runner refused the library")
        }
        var w = WireWriter()
        w.begin(.start)
        w.data(startPayload)
        w.end()
        guard process.send(w.bytes, deadline: deadline) else { return fail("creating the instance") }
        // `create` may call the host (log, ids, send_event, timeline plugins) before it returns,
        // and the plugins it added may already be answering events.
        var answer: [UInt8]?
        let services = client.withLock { $0.services }
        while answer == nil {
            guard process.readable(until: deadline), let (frameKind, frame) = process.readFrame() else { return fail("creating the instance") }
            switch frameKind {
            case .started: answer = frame
            case .call: if let services { self.answer(frame, services: services, process: process, plugins: plugins, signals: signals) }
            case .verdict: plugins.deliverVerdict(frame)
            default: return fail("creating the instance")
            }
        }
        var r = WireReader(answer ?? [])
        if r.u8() != IsolationWire.ok {
            let message = r.text()
            process.closeChannel()
            process.wait()
            signals.end()
            plugins.end("its instance could not be created")
            return .refused("could not be created: create failed: \(message)")
        }
        condition.lock()
        child = process
        currentChild = process
        self.plugins = plugins
        self.signals = signals
        childGone = false
        incoming.removeAll()
        condition.unlock()
        let reader = Thread { [self] in readLoop(process, plugins: plugins, signals: signals) }
        reader.name = "isolated \(key) reader"
        reader.start()
        var replay: [Item] = []
        if everStarted {
            if let settings = latestSettings.withLock({ $0 }) { replay.append(Item(op: .updateInitial, bytes: settings, replay: true)) }
            if started { replay.append(Item(op: .lifecycleStarted, replay: true)) }
            client.withLock { $0.stats }?._restarts.wrappingAdd(1, ordering: .relaxed)
        }
        everStarted = true
        return .started(replay: replay)
    }

    /// Reads the child's frames: results for the pump, calls answered here.
    func readLoop(_ process: RunnerProcess, plugins: IsolatedPlugins, signals: IsolatedSignals) {
        let services = client.withLock { $0.services }
        while let (kind, payload) = process.readFrame() {
            switch kind {
            case .results:
                var r = WireReader(payload)
                let count = Int(r.u32())
                if count == 0 {
                    condition.lock()
                    heartbeats += 1
                    condition.broadcast()
                    condition.unlock()
                    continue
                }
                var parsed: [(UInt8, String)] = []
                parsed.reserveCapacity(count)
                for _ in 0..<count {
                    let status = r.u8()
                    let message = r.text()
                    if r.failed { break }
                    parsed.append((status, message))
                }
                condition.lock()
                incoming.append(contentsOf: parsed)
                condition.broadcast()
                condition.unlock()
            case .call:
                if let services { answer(payload, services: services, process: process, plugins: plugins, signals: signals) }
            case .verdict:
                plugins.deliverVerdict(payload)
            case .settled:
                settled(payload)
            default:
                break
            }
        }
        condition.lock()
        if currentChild === process { childGone = true }
        condition.broadcast()
        condition.unlock()
    }

    func answer(_ payload: [UInt8], services: HostServices, process: RunnerProcess, plugins: IsolatedPlugins,
                        signals: IsolatedSignals) {
        var r = WireReader(payload)
        let id = r.u32()
        let function = IsolationWire.Function(rawValue: r.u8())
        let arg = r.i64()
        let bytes = r.data()
        guard !r.failed, let function else { return }
        var status = IsolationWire.ok
        var reply: [UInt8] = []
        func set(_ result: NativeHookResult) {
            switch result {
            case .ok: status = IsolationWire.ok
            case .retryable(let m): status = IsolationWire.retryable; reply = Array(m.utf8)
            case .permanent(let m): status = IsolationWire.permanent; reply = Array(m.utf8)
            }
        }
        switch function {
        case .log:
            services.log(NativeLogLevel(rawValue: Int32(truncatingIfNeeded: arg)) ?? .info, String(decoding: bytes, as: UTF8.self))
        case .sendEvent: set(services.sendEvent(bytes))
        case .userId:
            if let id = services.userId() { reply = Array(id.utf8) } else { status = IsolationWire.absent }
        case .anonymousId:
            if let id = services.anonymousId() { reply = Array(id.utf8) } else { status = IsolationWire.absent }
        case .traits: reply = (services.client?.traits() ?? [:]).serializedBytes()
        case .clientReset: set(services.client?.reset() ?? .permanent("no client"))
        case .clientFlush: set(services.client?.flush() ?? .permanent("no client"))
        case .timelineAdd:
            do throws(NativePluginRegistry.AddError) {
                try plugins.add(runnerId: UInt64(bitPattern: arg), description: (try? JSON(parsing: bytes))?.objectValue ?? [:])
            } catch {
                switch error {
                case .invalid(let why):
                    set(.permanent(why))
                    plugins.registry.report("add refused: \(why)")
                case .stopping(let why): set(.retryable(why))
                }
            }
        case .timelineRemove:
            if !plugins.remove(runnerId: UInt64(bitPattern: arg)) { set(.permanent("no plugin with id \(arg)")) }
        case .signalEmit:
            let result = bytes.withUnsafeBytes { HostSignalsTable.emit($0, into: services.signals()) }
            if case .failure(let e) = result {
                status = e.status == ah_status(AH_ERR_RETRYABLE) ? IsolationWire.retryable : IsolationWire.permanent
                reply = Array(e.message.utf8)
            }
        case .signalForward: set(signals.forward())
        case .signalConfiguration:
            if let text = HostSignalsTable.configurationText(of: services.signals()) { reply = Array(text.utf8) } else { status = IsolationWire.absent }
        case .httpSend:
            // Answered when the exchange ends, from the thread that made it.
            httpRelay.send(bytes, id: id, services: services, process: process)
            return
        }
        guard id != 0 else { return }
        var w = WireWriter()
        w.begin(.reply)
        w.u32(id)
        w.u8(status)
        w.data(reply)
        w.end()
        _ = process.send(w.bytes, deadline: monotonicSeconds() + 5)
    }
}
