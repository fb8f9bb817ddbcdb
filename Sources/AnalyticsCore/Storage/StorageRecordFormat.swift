import CZlib
import Synchronization

/// The on-disk layout of queue segments. A segment starts with an 8-byte header naming the format
/// ("AHQSEG" 0 and the version); then records follow back to back. Version 2 (written now):
///
///     marker (4 bytes F7 51 52 1A) | payload length (UInt32 LE) | MAC (UInt64 LE) | payload
///
/// The MAC is SipHash-2-4, keyed with the storage's secret (``StorageSecret``), of the segment's
/// number, the record's offset, its length and its payload: whoever cannot read the secret cannot
/// make a record the host accepts, nor move or copy one to another place. It also catches damage
/// (a damaged record is reported as not written by this host). Version 1 (before the key existed):
///
///     marker | payload length (UInt32 LE) | CRC-32 (UInt32 LE) of the length bytes and payload | payload
///
/// is still read, once, from segments the storage's key vouched for when it was created
/// (``StorageLegacySegments``); it is never written. The marker starts with 0xF7, a byte that
/// never occurs in UTF-8 text, so after damage the reader can find the next record again by
/// searching for the marker and checking the record.
enum StorageRecordFormat {
    /// A segment's format, the last byte of its header.
    enum Version: UInt8, Sendable {
        /// Records checked by a CRC-32 (written before the storage had a key).
        case checksummed = 1
        /// Records checked by a keyed MAC.
        case keyed = 2

        var recordHeaderSize: Int { self == .keyed ? 16 : 12 }
    }

    static let magic: [UInt8] = [0x41, 0x48, 0x51, 0x53, 0x45, 0x47, 0x00]  // "AHQSEG" 0
    static func segmentHeader(_ version: Version) -> [UInt8] { magic + [version.rawValue] }
    /// The header of the segments written now.
    static let segmentHeader = segmentHeader(.keyed)
    static let segmentHeaderSize = 8
    static let marker: [UInt8] = [0xF7, 0x51, 0x52, 0x1A]
    static let markerValue: UInt32 = 0x1A52_51F7
    /// The record header of the format written now.
    static let recordHeaderSize = Version.keyed.recordHeaderSize

    /// The CRC stored in a version 1 record: CRC-32 of the little-endian length followed by the payload.
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

    /// The MAC stored in a version 2 record at `offset` of segment `segment`.
    @inline(__always)
    static func mac(_ key: SipHash24, segment: UInt64, offset: Int, payload: UnsafeRawBufferPointer) -> UInt64 {
        key.mac(segment, UInt64(offset), UInt64(payload.count), payload)
    }

    /// Writes the 16-byte record header for `payload` at `destination` (which is `offset` in
    /// segment `segment`), the marker last: a record copied into a mapped segment by a process
    /// killed midway has no marker (recovery cuts it off silently: that append never returned).
    @inline(__always)
    static func writeHeader(to destination: UnsafeMutableRawPointer, payload: UnsafeRawBufferPointer,
                            key: SipHash24, segment: UInt64, offset: Int) {
        let length = UInt32(payload.count)
        destination.storeBytes(of: mac(key, segment: segment, offset: offset, payload: payload).littleEndian,
                               toByteOffset: 8, as: UInt64.self)
        destination.storeBytes(of: length.littleEndian, toByteOffset: 4, as: UInt32.self)
        atomicMemoryFence(ordering: .releasing)  // everything before (payload included) is stored first
        destination.storeBytes(of: markerValue.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    @inline(__always)
    static func load32(_ base: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    static func load64(_ base: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
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
