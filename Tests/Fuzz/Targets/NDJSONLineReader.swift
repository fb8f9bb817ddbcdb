// The command's NDJSON input reader (Sources/analytics-host/LineReader.swift) on arbitrary bytes
// read from a real file. The first two input bytes set a run of filler bytes put in front of the
// rest (none when the first byte is below 0x80, else up to 65534), so lines straddle the reader's
// 64 KiB blocks at every offset.
// Property: the lines handed out are exactly the input split at "\n", without one trailing "\r"
// each, a last line without "\n" included, and the line count matches; a line over the limit is
// handed out as too long (its length) instead, and nothing over the limit is ever handed out.
// libfuzzer-options: -max_len=4096
@testable import analytics_host
import Glibc

/// One input file for the whole run, rewritten per input (fuzz.sh removes the run's TMPDIR).
private let scratch = (FuzzTemporaryDirectory().path) + "/input.ndjson"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNDJSONLineReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    var bytes: [UInt8] = []
    if size >= 2 {
        // Half the inputs stay small (and fast); the others cross the first block boundary.
        let filler = input[0] & 0x80 == 0 ? 0 : Int(input[0] & 0x7F) << 9 | Int(input[1]) << 1
        bytes = [UInt8](repeating: UInt8(ascii: "a"), count: filler)
        bytes.append(contentsOf: input[2...])
    } else {
        bytes = Array(input)
    }
    guard fuzzWriteFile(scratch, bytes) else { fuzzFail("cannot write \(scratch)") }

    var expected: [ArraySlice<UInt8>] = []
    var start = 0
    while let nl = bytes[start...].firstIndex(of: 0x0A) {
        expected.append(bytes[start..<nl])
        start = nl + 1
    }
    if start < bytes.count { expected.append(bytes[start...]) }
    expected = expected.map { $0.last == 0x0D ? $0.dropLast() : $0 }

    let fd = open(scratch, O_RDONLY)
    guard fd >= 0 else { fuzzFail("cannot open \(scratch)") }
    defer { close(fd) }
    // A small limit so that over-long lines (skipped, reported by length) are exercised too.
    let limit = 1_000
    var reader = LineReader(fd: fd, maximumLineBytes: limit, block: 4_096)
    var got = 0
    while reader.next({ next in
        fuzzCheck(got < expected.count, "more lines than the input holds (\(expected.count))")
        switch next {
        case .text(let line):
            fuzzCheck(Array(line) == Array(expected[got]),
                      "line \(got + 1): \(line.count) bytes handed out, \(expected[got].count) expected")
            fuzzCheck(line.count <= limit, "line \(got + 1): \(line.count) bytes handed out, over the limit")
        case .tooLong(let bytes):
            fuzzCheck(expected[got].count > limit, "line \(got + 1): \(expected[got].count) bytes refused as too long")
            fuzzCheck(bytes >= expected[got].count && bytes <= expected[got].count + 1,
                      "line \(got + 1): reported \(bytes) bytes for \(expected[got].count)")
        }
        got += 1
    }) {}
    fuzzCheck(got == expected.count, "\(got) lines handed out, \(expected.count) in the input")
    fuzzCheck(reader.lineNumber == got, "lineNumber \(reader.lineNumber) after \(got) lines")
    return 0
}
