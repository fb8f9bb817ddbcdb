import Foundation
@testable import AnalyticsCore

/// Records what a signals subscriber receives (JSON text parsed back, to test the wire shape).
final class SignalRecorder: Sendable {
    private let items = Locked<[JSONObject]>([])
    var signals: [JSONObject] { items.withLock { $0 } }
    var indexes: [Int] { signals.compactMap { $0["index"]?.intValue } }
    var deliver: @Sendable ([UInt8], Signal) -> Void {
        { [self] bytes, _ in
            guard case .object(let o)? = try? JSON(parsing: bytes) else { return }
            items.withLock { $0.append(o) }
        }
    }
}

/// A gate a subscriber can block on, to hold the signals thread still.
final class Gate: @unchecked Sendable {
    private let condition = NSCondition()
    private var open = false
    private var arrived = 0
    func pass() {
        condition.lock()
        arrived += 1
        condition.broadcast()
        while !open { condition.wait() }
        condition.unlock()
    }
    func waitForArrival(timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while arrived == 0 { if !condition.wait(until: deadline) { return arrived > 0 } }
        return true
    }
    func release() {
        condition.lock()
        open = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A signals configuration without the default Segment broadcaster.
func quietSignals(_ change: (inout SignalsConfiguration) -> Void = { _ in }) -> SignalsConfiguration {
    var c = SignalsConfiguration()
    c.broadcasters = []
    change(&c)
    return c
}
