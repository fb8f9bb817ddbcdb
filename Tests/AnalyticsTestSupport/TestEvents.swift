import AnalyticsCore
import Foundation

/// Serialized track events for upload tests and benchmarks.
public enum TestEvents {
    /// A track event of about `size` bytes with `messageId` "m-<index>".
    public static func track(index: Int, size: Int = 200) -> [UInt8] {
        let head = #"{"type":"track","event":"Test Event","messageId":"m-\#(index)","anonymousId":"anon-1","timestamp":"2026-11-22T10:00:00.123Z","properties":{"pad":""#
        let tail = #""}}"#
        let pad = max(0, size - head.utf8.count - tail.utf8.count)
        var bytes = Array(head.utf8)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: pad))
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
