import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system temp dir, removed when the test ends.
final class QueueTestDirectory {
    let path: String
    var queuePath: String { path + "/queue" }

    init() { path = makeTempDirectory("durable-queue") }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func files() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: queuePath)) ?? []).sorted()
    }

    func segments() -> [String] { files().filter { $0.hasSuffix(".seg") } }

    func size(_ name: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: queuePath + "/" + name)[.size]) as? Int) ?? -1
    }

    func bytes(_ name: String) -> [UInt8] {
        [UInt8](FileManager.default.contents(atPath: queuePath + "/" + name) ?? Data())
    }

    func write(_ name: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: queuePath + "/" + name, contents: Data(bytes))
    }
}

/// What the queue reports through its error callback.
typealias QueueErrorLog = Recorder<QueueError>

extension Recorder where Element == QueueError {
    var droppedEvents: Int {
        all.reduce(0) { total, error in
            if case .droppedOverCap(let events, _, _) = error { return total + events }
            return total
        }
    }
}

/// The test event with index `index`, about `size` bytes of JSON.
func queueTestEvent(_ index: Int, size: Int = 600) -> [UInt8] {
    let head = "{\"i\":\(index),\"type\":\"track\",\"pad\":\""
    return Array(head.utf8) + [UInt8](repeating: UInt8(ascii: "y"), count: max(0, size - head.utf8.count - 2)) + Array("\"}".utf8)
}

func queueTestIndex(_ event: ArraySlice<UInt8>) -> Int {
    guard let json = try? JSON(parsing: Array(event)), case .number(let value)? = json["i"] else {
        Issue.record("unreadable event: \(String(decoding: event.prefix(80), as: UTF8.self))")
        return -1
    }
    return Int(value.value)
}

/// Reads and acknowledges everything left in the queue, returning the event indices in order.
func drainQueue(_ queue: DurableQueue, batchSize: Int = 97) throws -> [Int] {
    var indices: [Int] = []
    while true {
        let batch = try queue.peekBatch(maxEvents: batchSize, maxBytes: 475_000)
        if batch.isEmpty { return indices }
        indices += batch.map(queueTestIndex)
        try queue.acknowledge(batch)
    }
}
