import Foundation

/// Calls `refresh` every `interval` seconds on its own thread until stopped.
final class SettingsRefresher: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    init(interval: Double, refresh: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                let deadline = Date(timeIntervalSinceNow: interval)
                while !stopped && Date() < deadline { _ = condition.wait(until: deadline) }
                let stop = stopped
                condition.unlock()
                if stop { break }
                refresh()
            }
            done.signal()
        }
        thread.name = "settings refresh"
        thread.start()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
        _ = done.wait(timeout: .now() + 15)
    }
}
