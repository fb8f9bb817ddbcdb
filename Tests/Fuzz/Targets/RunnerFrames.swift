// What the host reads from a process-mode library's runner (RunnerFrames), on arbitrary bytes:
// the input is the runner's side of the stream, read from a real file frame by frame until its
// end or the first frame the host refuses, each frame decoded as the host decodes it.
// Properties: reading and decoding never crash, never trap and never allocate more than the
// input holds (ASan's allocation limit would stop the run); a frame is at most the wire's limit;
// every accepted outcome list is the frame's statuses and texts, all of it; every accepted call
// and verdict encodes back to exactly the frame's bytes (nothing skipped, nothing invented);
// a ready or refused frame's scan record (the one a cache file holds too) decodes without a
// trapping conversion, a library it describes has numbers within their fields (a durable cap
// within what the host honours) and encodes back to a record that decodes to the same library;
// settled and completed frames are read whole or refused.
// libfuzzer-options: -max_len=4096 -malloc_limit_mb=256
@testable import AnalyticsCore
import Glibc

/// One input file for the whole run, rewritten per input (fuzz.sh removes the run's TMPDIR).
private let scratch = (FuzzTemporaryDirectory().path) + "/runner.stream"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRunnerFrames(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard fuzzWriteFile(scratch, input) else { fuzzFail("cannot write \(scratch)") }
    let fd = open(scratch, O_RDONLY)
    guard fd >= 0 else { fuzzFail("cannot open \(scratch)") }
    defer { close(fd) }
    var consumed = 0
    reading: while true {
        switch RunnerFrames.read(fd) {
        case .end: break reading
        case .malformed: break reading
        case .frame(let kind, let payload):
            consumed += 5 + payload.count
            fuzzCheck(consumed <= size, "frames of \(consumed) bytes read from \(size)")
            fuzzCheck(payload.count < IsolationWire.maxFrame, "a frame over the limit")
            switch kind {
            case .results:
                guard case .success(let outcomes) = RunnerFrames.results(payload) else { break reading }
                fuzzCheck(outcomes.count * RunnerFrames.minimumOutcomeBytes + 4 <= payload.count, "more outcomes than bytes")
                // Read again field by field: every outcome is the frame's next status and text,
                // and together they are the whole frame.
                var r = WireReader(payload)
                fuzzCheck(Int(r.u32()) == outcomes.count, "a count other than the frame's")
                for o in outcomes {
                    fuzzCheck(o.status <= IsolationWire.permanent || o.status == IsolationWire.pending, "status \(o.status) accepted")
                    fuzzCheck(r.u8() == o.status, "a status other than the frame's")
                    let range = r.dataRange()
                    fuzzCheck(String(decoding: payload[range], as: UTF8.self) == o.message, "a text other than the frame's")
                }
                fuzzCheck(!r.failed && r.atEnd, "outcomes that are not the whole frame")
            case .call:
                guard case .success(let call) = RunnerFrames.call(payload) else { break reading }
                var w = WireWriter()
                w.u32(call.id); w.u8(call.function.rawValue); w.i64(call.arg); w.data(call.bytes)
                fuzzCheck(w.bytes == payload, "a call re-encodes to other bytes")
            case .verdict:
                guard case .success(let v) = RunnerFrames.verdict(payload) else { break reading }
                var w = WireWriter()
                w.u32(v.id); w.u32(UInt32(bitPattern: v.verdict)); w.u8(v.hasReplacement ? 1 : 0); w.data(v.bytes)
                fuzzCheck(w.bytes == payload, "a verdict re-encodes to other bytes")
            case .ready, .refused:
                var r = WireReader(payload)
                let text = r.text()
                guard !r.failed, let record = (try? JSON(parsing: text))?.objectValue else { break reading }
                fuzzScanRecord(record)
            case .settled:
                guard case .success(let settled) = RunnerFrames.settled(payload) else { break reading }
                fuzzCheck(settled.count > 0, "a settled frame of no event accepted")
                var r = WireReader(payload)
                fuzzCheck(r.u8() == (settled.abandoned ? IsolationWire.settledAbandoned : IsolationWire.settledFailed), "another outcome")
                fuzzCheck(r.u32() == settled.count && r.text() == settled.text && r.atEnd, "a settled frame read as other fields")
            case .completed:
                guard case .success(let serials) = RunnerFrames.completed(payload) else { break reading }
                fuzzCheck(payload.count == 4 + serials.count * 8, "serials that are not the whole frame")
            default:
                fuzzCheck(kind.rawValue >= IsolationWire.Kind.ready.rawValue, "a host-to-runner kind accepted from a runner")
            }
        }
    }
    return 0
}

/// A scan record as the host reads it from a runner or from its scan cache.
func fuzzScanRecord(_ record: JSONObject) {
    guard let outcome = ScanRecord.decode(record) else { return }
    guard case .success(let info) = outcome else { return }
    if let cap = info.durable?.maxDiskBytes {
        fuzzCheck(cap > 0 && cap <= NativeDurability.maxHonouredDiskBytes, "a durable cap of \(cap) bytes accepted")
    }
    guard case .success(let again)? = ScanRecord.decode(ScanRecord.encode(info)) else { fuzzFail("a library's own record is refused") }
    fuzzCheck(again == info, "a record that re-encodes to another library")
}
