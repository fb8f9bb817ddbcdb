import AnalyticsCore
import Foundation

/// Serialized track events for upload tests and benchmarks.
public enum TestEvents {
    private static let words = ["checkout", "product", "cart", "user", "mobile", "linux", "session", "price",
                                "campaign", "search", "button", "page", "premium", "trial", "order", "shipping"]

    /// A track event of about `size` bytes with `messageId` "m-<index>". The padding mixes common
    /// words with pseudo-random hex (seeded by `index`), so that gzip sees text about as
    /// compressible as real events, not a run of one letter.
    public static func track(index: Int, size: Int = 200) -> [UInt8] {
        let head = #"{"type":"track","event":"Test Event","messageId":"m-\#(index)","anonymousId":"anon-1","timestamp":"2026-11-22T10:00:00.123Z","properties":{"pad":""#
        let tail = #""}}"#
        let pad = max(0, size - head.utf8.count - tail.utf8.count)
        var bytes = Array(head.utf8)
        bytes.reserveCapacity(size)
        var state = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        let hex = Array("0123456789abcdef".utf8)
        var written = 0
        while written < pad {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let piece: [UInt8]
            if state >> 60 == 0 {  // 1 piece in 16 is random hex: ids, hashes
                piece = (0..<8).map { hex[Int((state >> (UInt64($0) * 4 + 8)) & 15)] } + [32]
            } else {
                piece = Array(words[Int((state >> 33) % UInt64(words.count))].utf8) + [32]
            }
            for b in piece where written < pad {
                bytes.append(b)
                written += 1
            }
        }
        bytes.append(contentsOf: tail.utf8)
        return bytes
    }

    public static func tracks(_ count: Int, size: Int = 200, from start: Int = 0) -> [[UInt8]] {
        (start..<(start + count)).map { track(index: $0, size: size) }
    }
}

/// A fresh directory under the system temporary directory, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    public let path: String
    public init(prefix: String = "analytics-test") throws {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}
