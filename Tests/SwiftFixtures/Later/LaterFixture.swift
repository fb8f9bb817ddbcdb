// A test fixture: a Swift integration whose track hook uses the completion form (finish later)
// and the host's HTTP requests, driven by its settings and each event's properties.
//
//   {"mode": "thread"}   answer from another thread after `delayMs`, with properties.outcome:
//                        "ok" (default), "retryable", "permanent", "retryOnce" (retryable the first
//                        time a messageId is seen)
//   {"mode": "inline"}   answer inside the hook
//   {"mode": "twice"}    answer from another thread twice (the second must be refused)
//   {"mode": "hold"}     hold every answer until flush, then answer them all OK from a thread
//   {"mode": "http", "url": "..."}   POST the event through the host's HTTP client; 2xx OK,
//                        429/5xx retryable (Retry-After logged), other statuses permanent
//
// Log lines: "mayFinishLater=<bool> maxPending=<n> http=<bool>" at create, "pending max=<n>" at flush,
// "notice refused: …" / "notice abandoned: …" for the host's notices.

import AnalyticsIntegration
import Foundation

public final class LaterFixture: Integration, TrackLaterHook, FlushHook, NoticesHook, @unchecked Sendable {
    // @unchecked: its mutable state is under `state`; the rest is immutable.
    public static let key = "Later"
    public static let version = "1.0.0"

    private let host: IntegrationHost
    private let mode: String
    private let url: String
    private let delay: Double
    private let state = NSLock()
    private var pending = 0
    private var pendingMax = 0
    private var held: [Completion] = []
    private var seen: Set<String> = []

    public init(settings: JSONObject, host: IntegrationHost) throws {
        self.host = host
        mode = settings["mode"]?.stringValue ?? "thread"
        url = settings["url"]?.stringValue ?? ""
        delay = (settings["delayMs"]?.doubleValue ?? 20) / 1000
        host.info("mayFinishLater=\(host.maxPending != nil) maxPending=\(host.maxPending ?? 0) http=\(host.http != nil)")
    }

    public func track(_ event: TrackEvent, completion: Completion) throws {
        let outcome = outcomeFor(event.raw)
        switch mode {
        case "inline":
            completion.finish(outcome)
        case "hold":
            state.lock(); held.append(completion); pending += 1; pendingMax = max(pendingMax, pending); state.unlock()
        case "http":
            try post(event.raw, completion)
        default:
            begin()
            let twice = mode == "twice"
            let host = host
            // A thread of its own, not libdispatch's global pool (which traps inside a runner's jail).
            let delay = delay
            Thread { [self] in
                Thread.sleep(forTimeInterval: delay)
                end()
                completion.finish(outcome)
                if twice, !completion.succeed() { host.info("second answer refused") }
            }.start()
        }
    }

    public func flush() throws {
        state.lock()
        let answers = held
        held = []
        pending -= answers.count
        let most = pendingMax
        state.unlock()
        host.info("pending max=\(most)")
        if !answers.isEmpty { Thread { for c in answers { c.succeed() } }.start() }
    }

    public func notice(_ notice: HostNotice) {
        switch notice {
        case .refused(let text): host.info("notice refused: \(text)")
        case .abandoned(let text): host.info("notice abandoned: \(text)")
        case .other(let kind, let text): host.info("notice \(kind): \(text)")
        }
    }

    private func begin() {
        state.lock(); pending += 1; pendingMax = max(pendingMax, pending); state.unlock()
    }

    private func end() {
        state.lock(); pending -= 1; state.unlock()
    }

    private func outcomeFor(_ event: Event) -> Result<Void, IntegrationError> {
        let id = event.messageId ?? ""
        switch event.properties["outcome"]?.stringValue {
        case "retryable": return .failure(.retryable("fixture: retry \(id)"))
        case "permanent": return .failure(.permanent("fixture: refused \(id) for good"))
        case "retryOnce":
            state.lock(); let first = seen.insert(id).inserted; state.unlock()
            return first ? .failure(.retryable("fixture: first attempt of \(id)")) : .success(())
        default: return .success(())
        }
    }

    private func post(_ event: Event, _ completion: Completion) throws {
        guard let http = host.http else { throw IntegrationError.permanent("fixture: the host offers no HTTP requests") }
        begin()
        let host = host
        let request = HostHTTP.Request(url: url, headers: [.init("Content-Type", "application/json"), .init("X-Fixture", "later")],
                                       body: event.serializedBytes, gzip: event.properties["gzip"]?.boolValue ?? false)
        do {
            try http.start(request) { [self] answer in
                end()
                switch answer {
                case .failed(let why): completion.fail(IntegrationError.retryable("fixture: \(why)"))
                case .response(let status, _, let body):
                    if let after = answer.header("Retry-After") { host.info("retry-after=\(after)") }
                    if (200..<300).contains(status) { completion.succeed(); return }
                    let text = "fixture: \(url) answered \(status): \(String(decoding: body, as: UTF8.self))"
                    completion.fail(status == 429 || status >= 500 ? IntegrationError.retryable(text) : IntegrationError.permanent(text))
                }
            }
        } catch {
            end()
            throw error
        }
    }
}

@_cdecl("analytics_host_plugin_v1") public func analyticsHostPluginV1(_ hostABI: UInt32, _ err: UnsafeMutablePointer<CChar>, _ errCapacity: Int) -> UnsafeRawPointer? { IntegrationExport.entry(LaterFixture.self, hostABI, err, errCapacity) }
