import AnalyticsCore
import Foundation
import LoopbackHTTP

/// One upload as the server saw it.
public struct ReceivedBatch {
    public let messageIds: [String]
    /// `properties.index` of each event (what `segment-crash-child` tracks).
    public let crashIndices: [Int]
    public let sentAt: String?
    public let writeKey: String?
    public let request: RecordedRequest

    public init(_ request: RecordedRequest) throws {
        self.request = request
        guard case .object(let body) = try JSON(parsing: request.body) else { throw SegmentTestFailure("body is not an object") }
        let events = body["batch"]?.arrayValue ?? []
        messageIds = events.compactMap { $0["messageId"]?.stringValue }
        crashIndices = events.compactMap { $0["properties"]?["index"]?.doubleValue.map(Int.init) }
        sentAt = body["sentAt"]?.stringValue
        writeKey = body["writeKey"]?.stringValue
    }
}

public struct SegmentTestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

extension LoopbackHTTPServer {
    /// Every upload so far, parsed.
    public func batches() throws -> [ReceivedBatch] { try requests.map(ReceivedBatch.init) }

    /// Every messageId received so far, in arrival order (duplicates kept).
    public func messageIds() throws -> [String] { try batches().flatMap(\.messageIds) }

    /// Polls until `ids` have all arrived; false at the deadline.
    public func waitForMessageIds(_ ids: Set<String>, timeout: Double = 20) throws -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if ids.isSubset(of: Set(try messageIds())) { return true }
            _ = waitForRequests(requestCount + 1, timeout: 0.05)
        }
        return ids.isSubset(of: Set(try messageIds()))
    }
}

/// Polls `condition` until it holds or `timeout` passes (no fixed sleeps: each round waits on a
/// condition variable for at most 10 ms).
public func eventually(timeout: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicSeconds() + timeout
    let idle = NSCondition()
    while monotonicSeconds() < deadline {
        if try condition() { return true }
        idle.lock()
        _ = idle.wait(until: Date(timeIntervalSinceNow: 0.01))
        idle.unlock()
    }
    return try condition()
}

/// A port on 127.0.0.1 where nothing listens (a server was there and stopped): connection refused.
public func refusedPort() throws -> UInt16 {
    let server = try LoopbackHTTPServer()
    let port = server.port
    server.stop()
    return port
}
