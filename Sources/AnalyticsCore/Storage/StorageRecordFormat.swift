import CZlib
import Synchronization

/// The on-disk layout of queue segments. A segment starts with an 8-byte header naming the format;
/// then records follow back to back, each framed as
///
///     marker (4 bytes F7 51 52 1A) | payload length (UInt32 LE) | CRC-32 (UInt32 LE) | payload
///
/// The CRC covers the length bytes and the payload, so a damaged length is caught too. The marker
/// starts with 0xF7, a byte that never occurs in UTF-8 text, so after damage the reader can find
/// the next record again by searching for the marker and checking its CRC.
enum StorageRecordFormat {
    static let segmentHeader: [UInt8] = [0x41, 0x48, 0x51, 0x53, 0x45, 0x47, 0x00, 0x01]  // "AHQSEG" 0 1
    static let segmentHeaderSize = 8
    static let marker: [UInt8] = [0xF7, 0x51, 0x52, 0x1A]
    static let markerValue: UInt32 = 0x1A52_51F7
    static let recordHeaderSize = 12

    /// The CRC stored in a record: CRC-32 of the little-endian length followed by the payload.
    @inline(__always)
    static func checksum(length: UInt32, payload: UnsafeRawBufferPointer) -> UInt32 {
        var le = length.littleEndian
        var crc = withUnsafeBytes(of: &le) { raw in
            crc32(0, raw.baseAddress!.assumingMemoryBound(to: Bytef.self), 4)
        }
        if let base = payload.baseAddress, payload.count > 0 {
            crc = crc32(crc, base.assumingMemoryBound(to: Bytef.self), uInt(payload.count))
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    /// Writes the 12-byte record header for `payload` at `destination`, the marker last: a record
    /// copied into a mapped segment by a process killed midway has no marker (recovery cuts it
    /// off silently: that append never returned).
    @inline(__always)
    static func writeHeader(to destination: UnsafeMutableRawPointer, payload: UnsafeRawBufferPointer) {
        let length = UInt32(payload.count)
        destination.storeBytes(of: checksum(length: length, payload: payload).littleEndian, toByteOffset: 8, as: UInt32.self)
        destination.storeBytes(of: length.littleEndian, toByteOffset: 4, as: UInt32.self)
        atomicMemoryFence(ordering: .releasing)  // everything before (payload included) is stored first
        destination.storeBytes(of: markerValue.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    @inline(__always)
    static func load32(_ base: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
}

/// Segment files are named by a decimal sequence number (`00000001.seg`, ...). Numbers only grow,
/// so a (segment, offset) position never refers to a different file later, and name order is
/// delivery order.
enum StorageSegmentName {
    static let suffix = ".seg"

    static func fileName(_ id: UInt64) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + suffix
    }

    /// The sequence number of a segment file name, or nil for any other file.
    static func parse(_ name: String) -> UInt64? {
        guard name.hasSuffix(suffix) else { return nil }
        let stem = name.dropLast(suffix.count)
        guard !stem.isEmpty, stem.count <= 19, stem.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        return UInt64(stem)
    }
}
