import Glibc

/// The frames a runner sends the host, decoded. Everything a runner sends is hostile input: the
/// library runs in that process and may write anything on its socket. Every count and length is
/// checked against the bytes of the frame before anything is allocated or trusted, a frame must
/// be consumed exactly (no trailing bytes), and a frame that breaks any of this ends that runner
/// and is reported (`MalformedFrame` says which frame and why).
enum RunnerFrames {
    struct MalformedFrame: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// One outcome of a results frame: an item's status byte and its failure text.
    struct Outcome: Equatable {
        let status: UInt8
        let message: String
    }

    /// Smallest encoding of one outcome: status byte and an empty text's length.
    static let minimumOutcomeBytes = 5

    /// A completed frame: the serials of pending calls that have their final answer.
    static func completed(_ payload: [UInt8]) -> Result<[UInt64], MalformedFrame> {
        var r = WireReader(payload)
        let claimed = Int(r.u32())
        guard !r.failed, payload.count == 4 + claimed * 8 else {
            return .failure(MalformedFrame(description: "completed frame of \(payload.count) bytes does not hold the serials it claims"))
        }
        return .success((0..<claimed).map { _ in UInt64(bitPattern: r.i64()) })
    }

    /// A settled frame: how many pending events ended not OK, and why.
    struct Settled: Equatable {
        let abandoned: Bool
        let count: UInt32
        let text: String
    }

    static func settled(_ payload: [UInt8]) -> Result<Settled, MalformedFrame> {
        var r = WireReader(payload)
        let kind = r.u8()
        let count = r.u32()
        let text = r.text()
        if r.failed { return .failure(MalformedFrame(description: "settled frame of \(payload.count) bytes is cut short")) }
        guard kind == IsolationWire.settledFailed || kind == IsolationWire.settledAbandoned else {
            return .failure(MalformedFrame(description: "settled frame: outcome \(kind), not 0 (failed) or 1 (abandoned)"))
        }
        guard count > 0 else { return .failure(MalformedFrame(description: "settled frame settles no event")) }
        guard r.atEnd else { return .failure(MalformedFrame(description: "settled frame: \(payload.count - r.offset) bytes after its end")) }
        return .success(Settled(abandoned: kind == IsolationWire.settledAbandoned, count: count, text: text))
    }

    /// A results frame: its outcomes in item order (empty: a heartbeat while a retry waits).
    static func results(_ payload: [UInt8]) -> Result<[Outcome], MalformedFrame> {
        var r = WireReader(payload)
        let claimed = r.u32()
        if r.failed { return .failure(MalformedFrame(description: "results frame of \(payload.count) bytes has no count")) }
        // A count the frame cannot hold is refused before any allocation sized by it.
        let room = (payload.count - 4) / minimumOutcomeBytes
        guard UInt64(claimed) <= UInt64(room) else {
            return .failure(MalformedFrame(description: "results frame claims \(claimed) outcomes in \(payload.count) bytes"))
        }
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(Int(claimed))
        for i in 0..<Int(claimed) {
            let status = r.u8()
            let range = r.dataRange()
            if r.failed {
                return .failure(MalformedFrame(description: "results frame: outcome \(i + 1) of \(claimed) runs past the frame's \(payload.count) bytes"))
            }
            guard status <= IsolationWire.permanent || status == IsolationWire.pending else {
                return .failure(MalformedFrame(description: "results frame: outcome \(i + 1) has status \(status), not 0, 1, 2 or 4 (pending)"))
            }
            outcomes.append(Outcome(status: status, message: String(decoding: payload[range], as: UTF8.self)))
        }
        guard r.atEnd else {
            return .failure(MalformedFrame(description: "results frame: \(payload.count - r.offset) bytes after its \(claimed) outcomes"))
        }
        return .success(outcomes)
    }

    /// A `call` frame: a host service the library called.
    struct Call: Equatable {
        let id: UInt32
        let function: IsolationWire.Function
        let arg: Int64
        let bytes: [UInt8]
    }

    static func call(_ payload: [UInt8]) -> Result<Call, MalformedFrame> {
        var r = WireReader(payload)
        let id = r.u32()
        let raw = r.u8()
        let arg = r.i64()
        let bytes = r.data()
        if r.failed { return .failure(MalformedFrame(description: "call frame of \(payload.count) bytes is cut short")) }
        guard let function = IsolationWire.Function(rawValue: raw) else {
            return .failure(MalformedFrame(description: "call frame names no host service (\(raw))"))
        }
        guard r.atEnd else { return .failure(MalformedFrame(description: "call frame: \(payload.count - r.offset) bytes after its end")) }
        return .success(Call(id: id, function: function, arg: arg, bytes: bytes))
    }

    /// A `verdict` frame: a timeline plugin's answer to `process`.
    struct Verdict: Equatable {
        let id: UInt32
        let verdict: Int32
        let hasReplacement: Bool
        let bytes: [UInt8]
    }

    static func verdict(_ payload: [UInt8]) -> Result<Verdict, MalformedFrame> {
        var r = WireReader(payload)
        let id = r.u32()
        let verdict = Int32(bitPattern: r.u32())
        let flag = r.u8()
        let bytes = r.data()
        if r.failed { return .failure(MalformedFrame(description: "verdict frame of \(payload.count) bytes is cut short")) }
        guard flag <= 1 else { return .failure(MalformedFrame(description: "verdict frame: replacement flag \(flag), not 0 or 1")) }
        guard r.atEnd else { return .failure(MalformedFrame(description: "verdict frame: \(payload.count - r.offset) bytes after its end")) }
        return .success(Verdict(id: id, verdict: verdict, hasReplacement: flag == 1, bytes: bytes))
    }

    /// What reading the next frame from a runner gave.
    enum Read {
        case frame(IsolationWire.Kind, [UInt8])
        /// The runner closed its end (or the read failed): how it ended is its wait status.
        case end
        case malformed(MalformedFrame)
    }

    /// Reads one frame from `fd`, saying why a header is refused (a length out of bounds, a kind
    /// the protocol does not have, a frame the runner never sends).
    static func read(_ fd: Int32) -> Read {
        var header: [UInt8] = []
        // A stream that ends inside a frame is a process that died while writing it: its wait
        // status says how, not the bytes it left.
        guard WireIO.readExactly(fd, into: &header, count: 5) else { return .end }
        let length = Int(UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24)
        guard length >= 1, length <= IsolationWire.maxFrame else {
            return .malformed(MalformedFrame(description: "frame length \(length) is outside 1...\(IsolationWire.maxFrame)"))
        }
        guard let kind = IsolationWire.Kind(rawValue: header[4]), kind.rawValue >= IsolationWire.Kind.ready.rawValue else {
            return .malformed(MalformedFrame(description: "frame kind \(header[4]) is not one a runner sends"))
        }
        var payload: [UInt8] = []
        guard WireIO.readExactly(fd, into: &payload, count: length - 1) else { return .end }
        return .frame(kind, payload)
    }
}
