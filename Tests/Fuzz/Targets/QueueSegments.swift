// The durable queue's segment reader on arbitrary bytes: the input becomes the segment files of a
// queue directory (the first byte picks one file, or two split at a point set by the second
// byte), then the queue is opened and drained batch by batch, and opened again.
// The files are in the old format (version 1: records checked by a CRC), which a queue whose key
// is made by this open vouches for (StorageLegacySegments): the reader, resync and repair are the
// same for both formats; a record in the keyed format cannot be made without the key.
// Properties: opening either works or throws (never crashes); draining ends; every event handed
// out is the payload of an intact record (marker, length, CRC) of the input, in file order; a
// well-formed segment gives back exactly its records; nothing acknowledged comes back.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/Queue.dict -max_len=8192
import AnalyticsCore
import CZlib
import Glibc

private let configuration = DurableQueue.Configuration(maxDiskBytes: 1 << 20, segmentBytes: 4096, maxRecordBytes: 4096)

/// The names the queue gives its first two segments, learnt from a real queue (so the target
/// follows any change of naming).
private let segmentNames: [String] = {
    let dir = FuzzTemporaryDirectory()
    defer { dir.remove() }
    do {
        let queue = try DurableQueue(directory: dir.path, configuration: configuration)
        let event = [UInt8](repeating: UInt8(ascii: "x"), count: 3000)
        try queue.append(event)
        try queue.append(event)
        try queue.close()
    } catch {
        fuzzFail("cannot set up a queue: \(error)")
    }
    let names = dir.list().filter { $0.hasSuffix(".seg") }
    guard names.count == 2 else { fuzzFail("expected two segment files, found \(dir.list())") }
    return names
}()

private let header: [UInt8] = Array("AHQSEG".utf8) + [0, 1]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueueSegments(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard size >= 2 else { return 0 }
    // Mode byte: bit 0 = two files; bit 1 = prefix each file with a valid header.
    let twoFiles = input[0] & 1 == 1
    let addHeader = input[0] & 2 == 2
    let body = Array(input[2...])
    var files: [[UInt8]] = []
    if twoFiles {
        let cut = body.count * Int(input[1]) / 255
        files = [Array(body[..<cut]), Array(body[cut...])]
    } else {
        files = [body]
    }
    if addHeader { files = files.map { header + $0 } }

    let dir = FuzzTemporaryDirectory()
    defer { dir.remove() }
    for (name, bytes) in zip(segmentNames, files) {
        guard fuzzWriteFile(dir.path + "/" + name, bytes) else { fuzzFail("cannot write a segment") }
    }
    // What an independent reader of the format finds: every intact record at any offset.
    let intact = files.map(intactRecords)

    var delivered: [[UInt8]] = []
    do {
        let queue = try DurableQueue(directory: dir.path, configuration: configuration)
        var rounds = 0
        while true {
            let batch = try queue.peekBatch(maxEvents: 7, maxBytes: 3000)
            if batch.isEmpty { break }
            for event in batch { delivered.append(Array(event)) }
            try queue.acknowledge(batch)
            rounds += 1
            fuzzCheck(rounds <= size + 2, "draining does not end (\(rounds) batches from \(size) bytes)")
        }
        fuzzCheck(!queue.hasPendingEvents, "drained, yet events are pending")
        try queue.close()
        let reopened = try DurableQueue(directory: dir.path, configuration: configuration)
        let again = try reopened.peekBatch(maxEvents: 100, maxBytes: 1 << 20)
        fuzzCheck(again.isEmpty, "\(again.count) acknowledged events came back after reopening")
        try reopened.close()
    } catch {
        // Refusing damaged storage with an error is allowed; crashing or handing out garbage is not.
    }

    // Each delivered event is an intact record's payload; file order is kept.
    var file = 0, next = 0
    for event in delivered {
        var found = false
        while file < intact.count && !found {
            if let i = intact[file][next...].firstIndex(where: { $0.payload == event }) {
                next = i + 1
                found = true
            } else {
                file += 1
                next = 0
            }
        }
        fuzzCheck(found, "an event that is no intact record of the input, or out of order: \(event.count) bytes")
    }
    // A clean single segment (header, then records back to back to the end) comes back whole.
    if files.count == 1, let clean = cleanRecords(files[0]) {
        fuzzCheck(delivered == clean, "a well-formed segment of \(clean.count) records gave \(delivered.count) events")
    }
    return 0
}

/// Record format (independent of the queue's code): marker F7 51 52 1A, UInt32 LE length,
/// UInt32 LE CRC-32 of the length bytes then the payload, payload.
private func record(in bytes: [UInt8], at offset: Int) -> [UInt8]? {
    guard offset + 12 <= bytes.count, bytes[offset..<(offset + 4)].elementsEqual([0xF7, 0x51, 0x52, 0x1A]) else { return nil }
    func u32(_ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[i + $1]) << (8 * UInt32($1)) } }
    let length = Int(u32(offset + 4))
    guard length <= configuration.maxRecordBytes, offset + 12 + length <= bytes.count else { return nil }
    var crc = crc32(0, nil, 0)
    bytes.withUnsafeBufferPointer { b in
        crc = crc32(crc, b.baseAddress! + offset + 4, 4)
        if length > 0 { crc = crc32(crc, b.baseAddress! + offset + 12, uInt(length)) }
    }
    guard UInt32(truncatingIfNeeded: crc) == u32(offset + 8) else { return nil }
    return Array(bytes[(offset + 12)..<(offset + 12 + length)])
}

private func intactRecords(_ bytes: [UInt8]) -> [(offset: Int, payload: [UInt8])] {
    var out: [(offset: Int, payload: [UInt8])] = []
    for offset in bytes.indices where bytes[offset] == 0xF7 {
        if let payload = record(in: bytes, at: offset) { out.append((offset, payload)) }
    }
    return out
}

private func cleanRecords(_ bytes: [UInt8]) -> [[UInt8]]? {
    guard bytes.count >= 8, Array(bytes[0..<8]) == header else { return nil }
    var out: [[UInt8]] = []
    var offset = 8
    while offset < bytes.count {
        guard let payload = record(in: bytes, at: offset) else { return nil }
        out.append(payload)
        offset += 12 + payload.count
    }
    return out
}
