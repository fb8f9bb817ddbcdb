import CAnalyticsABI
import Foundation
import Glibc

/// `analytics-host validate`: runs an integration library through the checks the ABI's rules
/// imply, each in a runner process of its own, so that a crash or a hang is a finding about that
/// check and the others still run. The checks themselves (`run`, inside the runner) use the same
/// loader and host table as a real run.
public enum LibraryValidator {
    /// A check's verdict.
    public enum Verdict: String, Sendable { case pass, fail, skip }

    public struct Finding: Sendable {
        public var check: String
        public var verdict: Verdict
        public var detail: String
    }

    /// The checks, in the order they run, with what each one does.
    public static let checks: [(name: String, what: String)] = [
        ("load", "the entry function is cheap and every symbol resolves (RTLD_NOW); struct sizes and minor version are usable"),
        ("create-empty", "create with {} and destroy"),
        ("create-garbage", "create with settings of unexpected types"),
        ("create-huge", "create with a 1 MiB settings object"),
        ("hooks-fuzz", "every event hook with well-formed, malformed and random JSON, then flush"),
        ("threads-alternating", "serialized hooks called from two threads in turn"),
        ("leftovers", "no thread or file descriptor of the instance is left after destroy"),
        ("completions", "finish-later tokens are completed exactly once"),
        ("durable", "a library asking for the durable queue (AH_EXT_DURABLE) is a destination and its disk cap can hold a queue"),
    ]

    /// The line a runner prints for its check (the only stdout line the host reads).
    static let marker = "analytics-host-validate: "

    // MARK: In the runner

    /// Runs one check in this process and prints its verdict line.
    public static func runCheck(_ name: String, file: String, descriptor: Int32, settings: JSONObject, toolchain: String) -> Int32 {
        let finding = check(name, file: file, descriptor: descriptor, settings: settings, toolchain: toolchain)
        report(finding.verdict, finding.detail)
        return 0
    }

    /// Prints a check's verdict line (the runner's, also when it cannot run the check).
    public static func report(_ verdict: Verdict, _ detail: String) {
        let line = marker + JSON.object(["verdict": .string(verdict.rawValue), "detail": .string(detail)]).serialized() + "\n"
        fflush(nil)
        _ = line.withCString { write(1, $0, strlen($0)) }
    }

    static func check(_ name: String, file: String, descriptor: Int32, settings: JSONObject, toolchain: String) -> Finding {
        func verdict(_ v: Verdict, _ detail: String) -> Finding { Finding(check: name, verdict: v, detail: detail) }
        let started = monotonicSeconds()
        let library: NativeLibrary
        do throws(PluginLoadError) {
            library = try PluginLoader(configuration: .init(allowGroupOrOtherWritable: true, hostSwiftToolchain: toolchain)).load(file: file, descriptor: descriptor)
        } catch {
            return verdict(.fail, "cannot load: \(error)")
        }
        let loadTime = monotonicSeconds() - started
        let info = library.info
        let services = HostServices(log: { _, _ in }, sendEvent: { _ in .ok }, userId: { nil }, anonymousId: { "validator" },
                                    http: HostServices.HTTP(get: { _, _ in .failed("the validator makes no requests") }, send: { _, answer in
                                        ServiceThreads.later { answer(.refused("the validator sends no requests")) }
                                    }))
        switch name {
        case "load":
            if loadTime > 0.5 { return verdict(.fail, "loading and the entry function took \(Int(loadTime * 1000)) ms (keep the entry function free of work)") }
            return verdict(.pass, "\(info.key) \(info.version), ABI \(info.abiVersion), hooks \(info.hooks.names.joined(separator: " "))")
        case "create-empty", "create-garbage", "create-huge":
            var given: JSONObject = [:]
            if name == "create-garbage" { given = ["apiKey": 12, "endpoint": ["nested": [1, .null, "x"]], "": "", "batchSize": -1] }
            if name == "create-huge" { given = ["blob": .string(String(repeating: "x", count: 1 << 20))] }
            do throws(PluginLoadError) {
                let instance = try library.makeInstance(settings: given, services: services)
                instance.destroy()
                return verdict(.pass, "created and destroyed")
            } catch {
                return verdict(.pass, "refused with a reason: \(error)")
            }
        case "durable":
            guard let durable = info.durable else { return verdict(.skip, "does not ask for the durable queue (its events live in memory)") }
            guard info.isDestination else { return verdict(.fail, "offers \(AH_EXT_DURABLE) but is not a destination: it receives no events to keep") }
            let cap = durable.maxDiskBytes ?? DurableFeed.defaultMaxDiskBytes
            do throws(QueueError) {
                try DurableFeed.configuration(maxDiskBytes: cap).validate()
            } catch {
                return verdict(.fail, "ah_durable.max_disk_bytes \(cap): \(error) (the host would keep its events in memory)")
            }
            return verdict(.pass, "its events wait on disk until answered (cap \(cap) bytes\(durable.maxDiskBytes == nil ? ", the host's default" : ""))")
        default:
            break
        }
        guard info.role.contains(.destination) else { return verdict(.skip, "not a destination: no event hooks to call") }
        let instance: NativeIntegration
        let threadsBefore = ServiceThreads.current(), fdsBefore = count("/proc/self/fd")
        do throws(PluginLoadError) {
            instance = try library.makeInstance(settings: settings, services: services)
        } catch {
            return verdict(.skip, "create refused the settings (give working ones with --settings): \(error)")
        }
        switch name {
        case "hooks-fuzz":
            var random = SystemRandomNumberGenerator()
            let texts: [[UInt8]] = [Array("{".utf8), Array("[]".utf8), Array("{\"type\":\"track\"}".utf8), Array("null".utf8),
                                    (0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }]
            for event in sampleEvents() { _ = instance.deliverAllowingPending(event) }
            for text in texts { _ = instance.deliverRaw(text) }
            _ = instance.flush()
            instance.destroy()
            return verdict(.pass, "\(sampleEvents().count) events and \(texts.count) malformed texts handled")
        case "threads-alternating":
            let turn = DispatchSemaphore(value: 0), back = DispatchSemaphore(value: 0)
            let other = Thread {
                for _ in 0..<50 { turn.wait(); _ = instance.deliverAllowingPending(sampleEvents()[1]); back.signal() }
            }
            other.start()
            for _ in 0..<50 {
                _ = instance.deliverAllowingPending(sampleEvents()[1])
                turn.signal()
                back.wait()
            }
            instance.destroy()
            return verdict(.pass, "100 calls, two threads in turn")
        case "leftovers":
            for event in sampleEvents() { _ = instance.deliverAllowingPending(event) }
            _ = instance.flush()
            instance.destroy()
            // Threads that were told to stop may take a moment to be gone. Those the host's services
            // run on (answers to the library's HTTP requests) are the host's, not the library's.
            func left() -> Set<pid_t> { ServiceThreads.current().subtracting(threadsBefore).subtracting(ServiceThreads.recorded) }
            let deadline = monotonicSeconds() + 2
            while !left().isEmpty, monotonicSeconds() < deadline { usleep(10_000) }
            let threads = left(), fds = count("/proc/self/fd") - fdsBefore
            if !threads.isEmpty {
                return verdict(.fail, "\(threads.count) thread\(threads.count == 1 ? "" : "s") still running after destroy (stop every thread in destroy): "
                               + ServiceThreads.describe(threads))
            }
            if fds > 0 { return verdict(.fail, "\(fds) file descriptor\(fds == 1 ? "" : "s") left open after destroy") }
            return verdict(.pass, "no thread or descriptor left")
        case "completions":
            guard instance.pendingCalls.isUsed else {
                instance.destroy()
                return verdict(.skip, "the library does not finish later (\(AH_EXT_FINISH_LATER))")
            }
            var tokens: [UInt64] = []
            for event in sampleEvents() { if case .pending(let t) = instance.deliverAllowingPending(event) { tokens.append(t) } }
            for t in tokens { instance.pendingCalls.park(t, timeout: 5) }
            _ = instance.flush()
            let deadline = monotonicSeconds() + 5
            var answered = 0
            while answered < tokens.count, monotonicSeconds() < deadline {
                instance.pendingCalls.waitForArrival(until: min(deadline, monotonicSeconds() + 0.1))
                answered += instance.pendingCalls.drain().count
            }
            // A second completion right after the first is refused and recorded.
            usleep(100_000)
            let refusals = instance.pendingCalls.takeRefusals()
            instance.destroy()
            if let first = refusals.first { return verdict(.fail, "\(refusals.count) completion\(refusals.count == 1 ? "" : "s") refused: \(first)") }
            if answered < tokens.count { return verdict(.fail, "\(tokens.count - answered) of \(tokens.count) pending calls had no answer within 5 s of a flush") }
            return verdict(.pass, "\(tokens.count) pending calls, each completed once")
        default:
            instance.destroy()
            return verdict(.fail, "unknown check \(name)")
        }
    }

    /// The threads of this process, by id, and those the validator's host services run on: a
    /// thread a library started is one that is neither. The services' work runs on one thread the
    /// validator starts and names (not libdispatch's pool, which may start a worker that never
    /// runs the work and so is nobody's to record).
    enum ServiceThreads {
        private static let tids = Locked<Set<pid_t>>([])
        private static let queue = Locked<[@Sendable () -> Void]>([])
        private static let waiting = DispatchSemaphore(value: 0)
        private static let server: Void = {
            let thread = Thread {
                record()
                while true {
                    waiting.wait()
                    let work = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    work?()
                }
            }
            thread.name = "ah-validator-svc"
            thread.start()
        }()

        /// Runs `work` later on the services' thread (an answer the ABI gives on another thread).
        static func later(_ work: @escaping @Sendable () -> Void) {
            server
            queue.withLock { $0.append(work) }
            waiting.signal()
        }

        /// Records the calling thread (its id from /proc/thread-self, "PID/task/TID").
        static func record() {
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
                  let tid = link.split(separator: "/").last.flatMap({ pid_t($0) }) else { return }
            tids.withLock { _ = $0.insert(tid) }
        }
        static var recorded: Set<pid_t> { tids.withLock { $0 } }
        /// "tid 12 (name), …": each thread by id and the name the kernel keeps for it.
        static func describe(_ tids: Set<pid_t>) -> String {
            tids.sorted().map { tid in
                let name = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                return "tid \(tid) (\(name ?? "gone"))"
            }.joined(separator: ", ")
        }

        static func current() -> Set<pid_t> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { pid_t($0) })
        }
    }

    static func count(_ directory: String) -> Int { (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? 0 }

    /// One event of each type.
    static func sampleEvents() -> [Event] {
        let common: JSONObject = ["anonymousId": "validator", "messageId": "m", "timestamp": "2026-01-01T00:00:00.000Z", "context": [:]]
        let payloads: [JSONObject] = [
            ["type": "identify", "userId": "u", "traits": ["email": "a@b.c"]],
            ["type": "track", "event": "Validated", "properties": ["n": 1]],
            ["type": "screen", "name": "Home"], ["type": "page", "name": "Docs"],
            ["type": "group", "groupId": "g"], ["type": "alias", "userId": "u", "previousId": "p"],
        ]
        return payloads.compactMap { p in
            var whole = common
            for (k, v) in p { whole[k] = v }
            return try? Event(payload: whole)
        }
    }

    // MARK: In the host

    /// Runs every check, each in its own runner process bounded by `timeout` seconds, as the user
    /// a process-mode runner of `run` would be (`user`, when this host runs as root): a library
    /// that passes here loads there.
    public static func validate(file: String, settings: JSONObject, runner: String, timeout: Double, user: RunnerUser = .nobody) -> [Finding] {
        if let problem = user.problem(readingFile: file) {
            return checks.map { Finding(check: $0.name, verdict: .fail, detail: "cannot be loaded: \(problem)") }
        }
        return checks.map { check in
            // Handed open, as to a `run` runner (RunnerFiles): on standard input, the one
            // descriptor Process passes along; the runner moves it to its place.
            let files: RunnerFiles
            do throws(RunnerFiles.OpenError) {
                files = try RunnerFiles.open(library: file)
            } catch {
                return Finding(check: check.name, verdict: .fail, detail: "cannot be loaded: \(error)")
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: runner)
            process.arguments = ["--validate", check.name, file, "--settings", JSON.object(settings).serialized(), "--toolchain", SwiftToolchain.current]
                + user.arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle(fileDescriptor: files.descriptors[0], closeOnDealloc: false)
            // The check runs jailed like a runner: the Swift runtime's crash backtracer (a process
            // it would start) must not turn a library's crash into a refused exec.
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            process.environment = environment
            do { try process.run() } catch {
                return Finding(check: check.name, verdict: .fail, detail: "cannot start \(runner): \(error.localizedDescription)")
            }
            withExtendedLifetime(files) {}
            let collected = Locked<[UInt8]>([])
            let read = DispatchSemaphore(value: 0)
            let reader = Thread {
                let bytes = [UInt8](out.fileHandleForReading.readDataToEndOfFile())
                collected.withLock { $0 = bytes }
                read.signal()
            }
            let done = DispatchSemaphore(value: 0)
            process.terminationHandler = { _ in done.signal() }
            reader.start()
            if done.wait(timeout: .now() + timeout) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                done.wait()
                return Finding(check: check.name, verdict: .fail, detail: "did not finish within \(timeout) s: a hook (or create/destroy) hangs")
            }
            // The output ends with the process (unless a thread it left holds the pipe: then give up).
            _ = read.wait(timeout: .now() + 2)
            if process.terminationReason == .uncaughtSignal {
                let signal = process.terminationStatus
                return Finding(check: check.name, verdict: .fail, detail: "the library crashed (signal \(signal), \(String(cString: strsignal(signal))))")
            }
            let text = String(decoding: collected.withLock { $0 }, as: UTF8.self)
            guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix(marker) }),
                  let object = (try? JSON(parsing: Array(line.dropFirst(marker.count).utf8)))?.objectValue,
                  let verdict = object["verdict"]?.stringValue.flatMap(Verdict.init(rawValue:)) else {
                return Finding(check: check.name, verdict: .fail, detail: "the check ended (exit status \(process.terminationStatus)) without a verdict")
            }
            return Finding(check: check.name, verdict: verdict, detail: object["detail"]?.stringValue ?? "")
        }
    }
}

extension NativeIntegration {
    /// Any bytes to the track hook, for the validator's malformed inputs.
    func deliverRaw(_ bytes: [UInt8]) -> NativeHookResult {
        guard let hook = library.hooks.track, isCallable else { return .ok }
        return withRawInstance { instance, buffer in
            bytes.withUnsafeBufferPointer { b in
                b.withMemoryRebound(to: CChar.self) { c in
                    NativeHookResult(status: hook(instance, c.baseAddress!, c.count, buffer.base, buffer.capacity), message: buffer.message, hook: "track")
                }
            }
        }
    }
}
