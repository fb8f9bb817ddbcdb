import Glibc

/// The protocol between the host and `analytics-plugin-runner` over two pipes (host → runner on
/// the runner's fd 3, runner → host on its fd 4). One frame: a little-endian `UInt32` length of
/// what follows, a kind byte, the payload. Events travel in batches (many per write) and their
/// results come back in batches, so a pipe write costs per batch, not per event.
///
///   host → runner   start (JSON: settings, options, storage directory, retry policy, signals
///                   configuration), batch (items in order: events, update, reset, flush,
///                   lifecycle, application events, destroy), reply (to one call of the library),
///                   plugin (a callback of a timeline plugin the library added: `process` is
///                   answered, the others are one-way), signal (one signal for the library's
///                   subscribers)
///   runner → host   ready (JSON: the library's info) or refused (JSON: the load error), started
///                   (create's outcome), results (in item order, sent at the end of a batch and at
///                   least every millisecond while one runs, so the host always knows which item is
///                   being processed; an empty one while a retry waits), call (a host service the
///                   library called; id 0: no reply), verdict (a plugin's answer to `process`),
///                   settled and completed (ABI 1.3: final outcomes of calls that answered pending)
enum IsolationWire {
    enum Kind: UInt8 {
        case start = 1, batch = 2, reply = 3, plugin = 4, signal = 5
        case ready = 10, refused = 11, started = 12, results = 13, call = 14, verdict = 15
        /// ABI 1.3: the final outcome of events whose results said `pending`, when it is not OK
        /// (u8 `settledFailed` / `settledAbandoned`, u32 events, text the report).
        case settled = 16
        /// ABI 1.3: events whose results said `pending` have their final answer (OK, failed, or
        /// abandoned past the hook timeout): u32 count, then each one's serial (i64), the number
        /// of pending results before its own since the process started. A durable destination
        /// crosses them off its queue; the others stay on disk (and go to the next process).
        case completed = 17
    }

    /// One item of a batch: what the runner calls on the instance, in this order.
    enum Op: UInt8 {
        case identify = 0, track = 1, screen = 2, group = 3, alias = 4
        case updateInitial = 10, updateRefresh = 11, reset = 12, flush = 13
        case lifecycleStarted = 14, lifecycleStopping = 15, destroy = 16
        /// AH_EXT_APPLICATION's `application_event`: bytes as `applicationItem` writes them.
        case application = 17

        init(_ type: EventType) {
            switch type {
            case .identify: self = .identify
            case .track: self = .track
            case .screen, .page: self = .screen
            case .group: self = .group
            case .alias: self = .alias
            }
        }

        var isEvent: Bool { rawValue <= 4 }

        /// The hook's name in reports.
        var hookName: String {
            switch self {
            case .identify: return "identify"
            case .track: return "track"
            case .screen: return "screen"
            case .group: return "group"
            case .alias: return "alias"
            case .updateInitial, .updateRefresh: return "update"
            case .reset: return "reset"
            case .flush: return "flush"
            case .lifecycleStarted: return "lifecycle(started)"
            case .lifecycleStopping: return "lifecycle(stopping)"
            case .destroy: return "destroy"
            case .application: return "application_event"
            }
        }
    }

    /// An `application` item's bytes: the AH_APP_* kind (u32), then the event's JSON (the hook's
    /// two arguments; the runner passes the JSON on in place, without a copy).
    static func applicationItem(_ event: ApplicationEvent) -> [UInt8] {
        var w = WireWriter()
        w.u32(UInt32(bitPattern: event.kind))
        w.bytes.append(contentsOf: event.json.serializedBytes())
        return w.bytes
    }

    /// Host services a library calls (`call` frames).
    enum Function: UInt8 {
        case log = 1, sendEvent = 2, userId = 3, anonymousId = 4, traits = 5, clientReset = 6, clientFlush = 7
        /// AH_EXT_TIMELINE: arg the runner's plugin id, bytes the description (JSON).
        case timelineAdd = 8, timelineRemove = 9
        /// AH_EXT_SIGNALS: emit (bytes the signal), the runner's subscriber forwarding (arg 1: on,
        /// 0: off), configuration.
        case signalEmit = 10, signalForward = 11, signalConfiguration = 12
        /// AH_EXT_CLIENTS: open (bytes the write key; reply the id as text), then the client's
        /// id in arg: send (bytes the event), userId, anonymousId, traits, reset, flush.
        case clientsOpen = 13, clientsSend = 14, clientsUserId = 15, clientsAnonymousId = 16
        case clientsTraits = 17, clientsReset = 18, clientsFlush = 19
        /// AH_EXT_HTTP_REQUESTS (1.3): bytes as `HTTPExchangeWire` writes a request; the reply
        /// comes when the exchange ends, while other calls go on being answered.
        case httpSend = 20
    }

    /// What a `plugin` frame asks of a timeline plugin.
    enum PluginOp: UInt8 {
        case process = 0, updateInitial = 1, updateRefresh = 2, reset = 3, flush = 4, release = 5
    }

    /// Status bytes of results and replies.
    static let ok: UInt8 = 0, retryable: UInt8 = 1, permanent: UInt8 = 2, absent: UInt8 = 3
    /// A result: the hook answered pending (ABI 1.3); a `settled` frame follows unless it ends OK.
    static let pending: UInt8 = 4
    static let settledFailed: UInt8 = 0, settledAbandoned: UInt8 = 1

    /// Largest frame either side accepts (a batch of events is at most this big).
    static let maxFrame = 64 << 20
}

/// Appends frames to a byte buffer.
struct WireWriter {
    var bytes: [UInt8] = []
    private var frameStart = 0

    mutating func begin(_ kind: IsolationWire.Kind) {
        frameStart = bytes.count
        bytes.append(contentsOf: [0, 0, 0, 0, kind.rawValue])
    }

    mutating func end() {
        let length = UInt32(bytes.count - frameStart - 4)
        withUnsafeBytes(of: length.littleEndian) { raw in
            for i in 0..<4 { bytes[frameStart + i] = raw[i] }
        }
    }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    /// A length-prefixed (u32) byte string.
    mutating func data<C: Collection>(_ d: C) where C.Element == UInt8 {
        u32(UInt32(d.count))
        bytes.append(contentsOf: d)
    }
    mutating func text(_ s: String) { data(Array(s.utf8)) }

    var isEmpty: Bool { bytes.isEmpty }
    mutating func reset() { bytes.removeAll(keepingCapacity: true) }
}

/// Reads the fields of one frame's payload; every read is bounds-checked (a malformed frame from
/// a library's process must not crash the host), `failed` is set on a short read.
struct WireReader {
    let bytes: [UInt8]
    var offset: Int
    var failed = false

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var atEnd: Bool { offset >= bytes.count }

    mutating func u8() -> UInt8 {
        guard offset + 1 <= bytes.count else { failed = true; return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() -> UInt16 { UInt16(u8()) | UInt16(u8()) << 8 }
    mutating func u32() -> UInt32 { UInt32(u16()) | UInt32(u16()) << 16 }
    mutating func i64() -> Int64 { Int64(bitPattern: UInt64(u32()) | UInt64(u32()) << 32) }

    /// A u32-length-prefixed slice, as a range of `bytes`.
    mutating func dataRange() -> Range<Int> {
        let n = Int(u32())
        guard !failed, n <= bytes.count - offset else { failed = true; return offset..<offset }
        defer { offset += n }
        return offset..<(offset + n)
    }

    mutating func data() -> [UInt8] { Array(bytes[dataRange()]) }
    mutating func text() -> String { String(decoding: bytes[dataRange()], as: UTF8.self) }
}

/// Blocking frame I/O on a file descriptor.
enum WireIO {
    /// Writes everything; false when the other end is gone. With a deadline (monotonic seconds),
    /// also false when the reader does not take the bytes in time (a stopped process).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], deadline: Double? = nil) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                if let deadline {
                    let left = deadline - monotonicSeconds()
                    if left <= 0 { return false }
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    let r = poll(&p, 1, Int32(min(left * 1000 + 1, 60_000)))
                    if r < 0 && errno == EINTR { continue }
                    if r == 0 { continue }
                    if p.revents & Int16(POLLERR | POLLHUP) != 0 && p.revents & Int16(POLLOUT) == 0 { return false }
                }
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return false
                }
                offset += n
            }
            return true
        }
    }

    /// Reads exactly `count` bytes; false at end of file or on an error.
    static func readExactly(_ fd: Int32, into buffer: inout [UInt8], count: Int) -> Bool {
        buffer.removeAll(keepingCapacity: true)
        if count == 0 { return true }
        buffer = [UInt8](unsafeUninitializedCapacity: count) { raw, initialized in
            var offset = 0
            while offset < count {
                let n = read(fd, raw.baseAddress! + offset, count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                offset += n
            }
            initialized = offset
        }
        return buffer.count == count
    }

    /// Reads one frame: its kind and payload; nil at end of file, on an error or a malformed frame.
    static func readFrame(_ fd: Int32) -> (IsolationWire.Kind, [UInt8])? {
        var header: [UInt8] = []
        guard readExactly(fd, into: &header, count: 5) else { return nil }
        let length = Int(UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24)
        guard length >= 1, length <= IsolationWire.maxFrame, let kind = IsolationWire.Kind(rawValue: header[4]) else { return nil }
        var payload: [UInt8] = []
        guard readExactly(fd, into: &payload, count: length - 1) else { return nil }
        return (kind, payload)
    }
}
