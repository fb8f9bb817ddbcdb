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
        let process: IsolatedProcess
        do throws(IsolatedProcess.SpawnError) {
            var arguments = ["--serve", info.file] + memoryLimitArguments()
            arguments += ["--toolchain", SwiftToolchain.current]
            if progress != nil { arguments.append("--progress") }
            arguments += grants.runnerArguments + limits.fileLimitArguments + ["--own-directory", ownDirectory] + limits.runnerUser.arguments
            // The library and the granted paths, opened here with the host's rights (RunnerFiles).
            if let problem = limits.runnerUser.problem(readingFile: info.file) { return .refused("cannot be loaded: \(problem)") }
            let files: RunnerFiles
            do throws(RunnerFiles.OpenError) {
                files = try RunnerFiles.open(library: info.file, grants: grants)
            } catch {
                return .refused("cannot be loaded: \(error)")
            }
            if !pidsCgroupTried {
                pidsCgroupTried = true
                pidsCgroup = RunnerPidsCgroup.make(limit: limits.maxThreads)
            }
            if let pidsCgroup { arguments += ["--pids-cgroup", pidsCgroup.path] }
            try? FileManager.default.createDirectory(atPath: ownDirectory, withIntermediateDirectories: true)
            limits.runnerUser.own(ownDirectory)
            process = try IsolatedProcess.spawn(runner: runner, arguments: arguments, label: key, files: files, progress: progress)
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
            plugins.end("its process \(IsolatedProcess.describe(status: status)) while \(during)")
            return .failed(status: status, during: during)
        }
        // Starting a process and loading the library is not a hook call: at least 5 s for it
        // (and for `create`), however short the per-call deadline is.
        let deadline = monotonicSeconds() + max(timeout, 5)
        guard process.readable(until: deadline) else { return fail("loading the library") }
        guard case .frame(let kind, let payload) = RunnerFrames.read(process.fd), kind == .ready || kind == .refused else {
            return fail("loading the library")
        }
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
            guard process.readable(until: deadline) else { return fail("creating the instance") }
            let read = RunnerFrames.read(process.fd)
            switch read {
            case .frame(.started, let frame): answer = frame
            case .frame(.call, let frame):
                guard case .success(let call) = RunnerFrames.call(frame) else { return fail("creating the instance (it sent a malformed call frame)") }
                if let services { self.answer(call, services: services, process: process, plugins: plugins, signals: signals) }
            case .frame(.verdict, let frame):
                guard case .success(let verdict) = RunnerFrames.verdict(frame) else { return fail("creating the instance (it sent a malformed verdict frame)") }
                plugins.deliverVerdict(verdict)
            case .malformed(let why): return fail("creating the instance (it sent a malformed frame: \(why))")
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
        awaitingResults = 0
        pendingAnnounced = 0
        unsettled = 0
        protocolError = nil
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

    /// Reads the child's frames: results for the pump, calls answered here. Everything in them is
    /// the library's to forge: a frame that is malformed, or answers items the host did not send,
    /// ends the process (the pump reports it with the reason).
    func readLoop(_ process: IsolatedProcess, plugins: IsolatedPlugins, signals: IsolatedSignals) {
        let services = client.withLock { $0.services }
        var malformed: RunnerFrames.MalformedFrame?
        reading: while true {
            switch RunnerFrames.read(process.fd) {
            case .end: break reading
            case .malformed(let why): malformed = why; break reading
            case .frame(let kind, let payload):
                switch kind {
                case .results:
                    switch RunnerFrames.results(payload) {
                    case .failure(let why): malformed = why; break reading
                    case .success(let outcomes) where outcomes.isEmpty:
                        condition.lock()
                        heartbeats += 1
                        condition.broadcast()
                        condition.unlock()
                    case .success(let outcomes):
                        condition.lock()
                        guard outcomes.count <= awaitingResults else {
                            let expected = awaitingResults
                            condition.unlock()
                            malformed = .init(description: "results frame answers \(outcomes.count) items, \(expected) are waiting for an answer")
                            break reading
                        }
                        awaitingResults -= outcomes.count
                        let pendingOnes = outcomes.reduce(0) { $0 + ($1.status == IsolationWire.pending ? 1 : 0) }
                        pendingAnnounced += UInt64(pendingOnes)
                        unsettled += pendingOnes
                        incoming.append(contentsOf: outcomes.map { ($0.status, $0.message) })
                        condition.broadcast()
                        condition.unlock()
                    }
                case .call:
                    switch RunnerFrames.call(payload) {
                    case .failure(let why): malformed = why; break reading
                    case .success(let call):
                        if let services { answer(call, services: services, process: process, plugins: plugins, signals: signals) }
                    }
                case .verdict:
                    switch RunnerFrames.verdict(payload) {
                    case .failure(let why): malformed = why; break reading
                    case .success(let verdict): plugins.deliverVerdict(verdict)
                    }
                case .settled:
                    switch RunnerFrames.settled(payload) {
                    case .failure(let why): malformed = why; break reading
                    case .success(let frame):
                        // No more events settle than answered pending and have not settled yet.
                        condition.lock()
                        let open = unsettled
                        if Int(frame.count) <= open { unsettled -= Int(frame.count) }
                        condition.unlock()
                        guard Int(frame.count) <= open else {
                            malformed = .init(description: "settled frame settles \(frame.count) events, \(open) answered pending and are not settled")
                            break reading
                        }
                        settled(frame)
                    }
                case .completed:
                    switch RunnerFrames.completed(payload) {
                    case .failure(let why): malformed = why; break reading
                    case .success(let serials):
                        // A serial names a pending result the process gave, or one of the items
                        // it holds whose result is still on its way: nothing else is held.
                        condition.lock()
                        let bound = pendingAnnounced + UInt64(awaitingResults)
                        condition.unlock()
                        if let forged = serials.first(where: { $0 >= bound }) {
                            malformed = .init(description: "completed frame names serial \(forged); the process gave \(bound) pending results at most")
                            break reading
                        }
                        answered(serials, by: process)
                    }
                default:
                    malformed = .init(description: "a \(kind) frame after the instance was created")
                    break reading
                }
            }
        }
        if malformed != nil { process.kill() }
        condition.lock()
        if currentChild === process {
            childGone = true
            if let malformed, protocolError == nil { protocolError = malformed.description }
        }
        condition.broadcast()
        condition.unlock()
    }

    func answer(_ call: RunnerFrames.Call, services: HostServices, process: IsolatedProcess, plugins: IsolatedPlugins,
                        signals: IsolatedSignals) {
        let (id, function, arg, bytes) = (call.id, call.function, call.arg, call.bytes)
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
        case .clientsOpen, .clientsSend, .clientsUserId, .clientsAnonymousId, .clientsTraits, .clientsReset, .clientsFlush:
            (status, reply) = ProcessDestination.answerClients(function, id: UInt64(bitPattern: arg), bytes: bytes, services.clients)
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
