import CAnalyticsABI
import Foundation

/// The answer to one event call of a hook in its completion form (``TrackLaterHook``…): give it
/// exactly once, from any thread, inside the hook or after it returned — e.g. once the vendor
/// acknowledged the upload that held the event.
///
/// With a host that can finish calls later (ABI 1.3 `AH_EXT_FINISH_LATER`) the hook answers
/// "pending" when it returns unanswered, and the host goes on with the next events; the answer
/// then counts as if the hook had returned it (`.retryable`: the host calls again later with the
/// same event, with backoff). With an older host (``mayFinishLater`` false) the hook's return
/// waits for the answer: complete before returning, or soon from another thread.
///
/// A second answer changes nothing: the host refuses and reports it (as it does an answer after
/// the instance ended or after the host's hook timeout, when the call was abandoned).
public struct Completion: Sendable {
    let box: CompletionBox

    /// Whether the hook may return before answering (the host finishes the call later).
    public var mayFinishLater: Bool { box.token != 0 }

    /// The event was handled (delivered to the vendor). False when the answer was refused.
    @discardableResult
    public func succeed() -> Bool { box.complete(ah_status(AH_OK), "") }

    /// The event failed: ``IntegrationError/retryable(_:)`` to be called again later, any other
    /// error for good. False when the answer was refused.
    @discardableResult
    public func fail(_ error: any Error) -> Bool {
        let retryable: Bool
        if case IntegrationError.retryable = error { retryable = true } else { retryable = false }
        return box.complete(ah_status(retryable ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT), ErrorText.describe(error))
    }

    /// ``succeed()`` or ``fail(_:)`` from a result.
    @discardableResult
    public func finish(_ result: Result<Void, IntegrationError>) -> Bool {
        switch result {
        case .success: return succeed()
        case .failure(let error): return fail(error)
        }
    }
}

/// One call's answer, between the hook's thread and whoever answers.
final class CompletionBox: @unchecked Sendable {
    /// The host's token for this call (0: the host cannot finish it later).
    let token: UInt64
    private let host: IntegrationHost
    private let lock = NSLock()
    private enum Phase { case inCall, later, done }
    private var phase = Phase.inCall
    private var answer: (ah_status, String)?
    private let answered = DispatchSemaphore(value: 0)

    init(token: UInt64, host: IntegrationHost) {
        self.token = token
        self.host = host
    }

    func complete(_ status: ah_status, _ reason: String) -> Bool {
        lock.lock()
        switch phase {
        case .inCall where answer == nil:
            answer = (status, reason)
            lock.unlock()
            answered.signal()
            return true
        case .later:
            phase = .done
            lock.unlock()
            return host.finishLater?.complete(token, status, reason) ?? false
        case .inCall, .done:
            lock.unlock()
            // The host judges a token's second answer (and reports it); without one, say it here.
            if token != 0, let finishLater = host.finishLater { return finishLater.complete(token, status, reason) }
            host.error("a call was completed twice; the second answer is ignored (a bug in the integration)")
            return false
        }
    }

    /// The hook threw: its error is the answer; a completion given meanwhile or later is refused.
    func close() {
        lock.lock()
        phase = .done
        lock.unlock()
    }

    /// The hook returned: its answer (given during the call), or nil for "pending" (the host
    /// finishes it later). Without a token this waits for the answer.
    func returned() -> (ah_status, String)? {
        lock.lock()
        if let answer {
            phase = .done
            lock.unlock()
            return answer
        }
        if token != 0 {
            phase = .later
            lock.unlock()
            return nil
        }
        lock.unlock()
        answered.wait()
        lock.lock()
        defer { lock.unlock() }
        phase = .done
        return answer ?? (ah_status(AH_ERR_PERMANENT), "no answer")
    }
}

/// The host's `AH_EXT_FINISH_LATER` table.
struct FinishLaterTable: @unchecked Sendable {
    let table: UnsafePointer<ah_host_finish_later>
    let ctx: UnsafeMutableRawPointer?

    var maxPending: Int { Int(table.pointee.max_pending) }

    func token() -> UInt64 { table.pointee.token(ctx) }

    func complete(_ token: UInt64, _ status: ah_status, _ reason: String) -> Bool {
        var text = reason
        return text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                table.pointee.complete(ctx, token, status, chars.baseAddress, chars.count) == ah_status(AH_OK)
            }
        }
    }
}
