import Foundation

/// A thread dedicated to one library instance that is not a destination: its calls (update,
/// reset, flush, lifecycle, destroy) run there one at a time, in the order they were asked for,
/// so the instance may block without holding up the caller, as a destination's worker allows.
final class InstanceThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        self.thread = thread
        thread.start()
    }

    /// Whether the caller is this thread (a job that waits for another job would wait forever).
    var isCurrent: Bool { Thread.current === thread }

    /// Queues a job; false once the thread stopped taking jobs.
    @discardableResult
    func submit(_ job: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Runs `job` on the thread and waits for it (at most `timeout` seconds; inline when called
    /// from the thread itself). False if it did not finish in time or the thread had stopped.
    @discardableResult
    func perform(timeout: Double, _ job: @escaping () -> Void) -> Bool {
        if isCurrent { job(); return true }
        let done = DispatchSemaphore(value: 0)
        guard submit({ job(); done.signal() }) else { return false }
        return done.wait(timeout: .now() + timeout) == .success
    }

    /// Runs `last` after every queued job, then ends the thread. Waits at most `timeout` seconds.
    @discardableResult
    func stop(timeout: Double, last: @escaping () -> Void) -> Bool {
        condition.lock()
        if stopping { condition.unlock(); return true }
        jobs.append(last)
        stopping = true
        condition.signal()
        condition.unlock()
        if isCurrent { return true }
        return finished.wait(timeout: .now() + timeout) == .success
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            let batch = jobs
            jobs.removeAll()
            let done = stopping
            condition.unlock()
            for job in batch { job() }
            if done {
                condition.lock()
                let more = !jobs.isEmpty
                condition.unlock()
                if !more { break }
            }
        }
        finished.signal()
    }
}
