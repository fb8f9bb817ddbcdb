import CAnalyticsABI

/// What the host offers an integration instance: its logger, a way to send new events into the
/// pipeline, and the current user's ids. A thin Swift face on the ABI's `ah_host` table.
///
/// Valid for the life of the instance it was given to (until its `deinit`); every method may be
/// called from any thread, including from threads the integration started.
public struct IntegrationHost: @unchecked Sendable {
    // @unchecked: the table is immutable, host-owned, and the host guarantees it stays valid and
    // thread-safe until the instance ends.
    private let table: UnsafePointer<ah_host>

    /// `AH_EXT_FINISH_LATER`, when the host offers it (ABI 1.3).
    let finishLater: FinishLaterTable?
    /// The host's HTTP client for uploads (ABI 1.3 `AH_EXT_HTTP_REQUESTS`), when it offers one.
    public let http: HostHTTP?
    /// `AH_EXT_RETRY_AFTER`, when the host offers it (ABI 1.3): see ``retryAfter(seconds:)``.
    let retryAfterTable: RetryAfterTable?

    /// `finishesLater`: the integration has hooks in their completion form. Only then is
    /// `AH_EXT_FINISH_LATER` looked up: the host arms a token for every event call of a library
    /// that did.
    init(_ table: UnsafePointer<ah_host>, finishesLater: Bool = false) {
        self.table = table
        let host = table.pointee
        let getExtension = MemoryLayout<ah_host>.offset(of: \ah_host.get_extension)!
        guard Int(host.size) >= getExtension + MemoryLayout<UnsafeRawPointer>.size else {
            finishLater = nil
            http = nil
            retryAfterTable = nil
            return
        }
        if finishesLater, let raw = host.get_extension(host.ctx, AH_EXT_FINISH_LATER),
           raw.load(as: UInt32.self) >= UInt32(MemoryLayout<ah_host_finish_later>.size) {
            finishLater = FinishLaterTable(table: raw.assumingMemoryBound(to: ah_host_finish_later.self), ctx: host.ctx)
        } else {
            finishLater = nil
        }
        if let raw = host.get_extension(host.ctx, AH_EXT_HTTP_REQUESTS),
           raw.load(as: UInt32.self) >= UInt32(MemoryLayout<ah_host_http_requests>.size) {
            http = HostHTTP(table: raw.assumingMemoryBound(to: ah_host_http_requests.self), ctx: host.ctx)
        } else {
            http = nil
        }
        if let raw = host.get_extension(host.ctx, AH_EXT_RETRY_AFTER),
           raw.load(as: UInt32.self) >= UInt32(MemoryLayout<ah_host_retry_after>.size) {
            retryAfterTable = RetryAfterTable(table: raw.assumingMemoryBound(to: ah_host_retry_after.self), ctx: host.ctx)
        } else {
            retryAfterTable = nil
        }
    }

    /// Tells the host that the vendor asked to wait `seconds` (a 429 or 503 with Retry-After)
    /// before the instance's next retry, so its backoff honours the vendor rather than guessing.
    /// Say it before answering the call `.retryable`. False when the host has no
    /// `AH_EXT_RETRY_AFTER` (it then backs off on its own), the instance ended, or `seconds` is
    /// not a positive wait under a day. Any thread, never blocks.
    @discardableResult
    public func retryAfter(seconds: Double) -> Bool {
        guard let retryAfterTable, seconds > 0, seconds < 86_400 else { return false }
        return retryAfterTable.table.pointee.retry_after(retryAfterTable.ctx, UInt32((seconds * 1000).rounded(.up))) == ah_status(AH_OK)
    }

    /// How many calls of this instance may be pending at once (hooks in their completion form);
    /// nil when the host cannot finish calls later (then each hook waits for its answer).
    public var maxPending: Int? { finishLater?.maxPending }

    /// The ABI version the host speaks.
    public var abiVersion: ABIVersion { ABIVersion(raw: table.pointee.abi_version) }

    /// Severity of a log line.
    public enum LogLevel: Int32, Sendable {
        case debug = 0, info = 1, warn = 2, error = 3
    }

    /// Writes one line through the host's logger.
    public func log(_ level: LogLevel, _ message: String) {
        var text = message
        text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { chars in
                table.pointee.log(table.pointee.ctx, level.rawValue, chars.baseAddress, chars.count)
            }
        }
    }

    public func debug(_ message: String) { log(.debug, message) }
    public func info(_ message: String) { log(.info, message) }
    public func warn(_ message: String) { log(.warn, message) }
    public func error(_ message: String) { log(.error, message) }

    /// Hands a new event (a complete message object with a `type`) to the host, which runs it
    /// through its whole pipeline later, on its own threads, so this never re-enters the caller.
    /// Throws `.retryable` when the host is saturated or stopping, `.permanent` when it refused
    /// the event as invalid.
    public func send(_ event: JSONObject) throws(IntegrationError) {
        try send(json: event.serializedBytes())
    }

    /// Same as ``send(_:)`` for an event already encoded as JSON text.
    public func send(json bytes: [UInt8]) throws(IntegrationError) {
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                table.pointee.send_event(table.pointee.ctx, chars.baseAddress, chars.count)
            }
        }
        switch status {
        case ah_status(AH_OK): return
        case ah_status(AH_ERR_RETRYABLE): throw .retryable("the host cannot take the event now (saturated or stopping)")
        default: throw .permanent("the host refused the event as invalid")
        }
    }

    /// The current userId, if one is set.
    public var userId: String? { readID(table.pointee.user_id) }

    /// The current anonymousId (nil only while the host is stopping).
    public var anonymousId: String? { readID(table.pointee.anonymous_id) }

    private typealias IDFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, Int) -> Int64

    /// Reads an id through the snprintf-style contract: a stack-sized first try, one exact retry
    /// when the id was longer.
    private func readID(_ function: IDFunction) -> String? {
        var capacity = 128
        while true {
            let result: (Int64, String) = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
                let length = function(table.pointee.ctx, buffer.baseAddress, capacity)
                guard length >= 0, length < Int64(capacity) else { return (length, "") }
                let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(length))
                return (length, String(decoding: bytes, as: UTF8.self))
            }
            if result.0 < 0 { return nil }
            if result.0 < Int64(capacity) { return result.1 }
            capacity = Int(result.0) + 1
        }
    }
}

/// The host's `AH_EXT_RETRY_AFTER` table.
struct RetryAfterTable: @unchecked Sendable {
    // @unchecked: a host-owned immutable table, valid until the instance ends.
    let table: UnsafePointer<ah_host_retry_after>
    let ctx: UnsafeMutableRawPointer?
}
