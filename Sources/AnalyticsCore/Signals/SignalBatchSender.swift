import Foundation

/// POSTs batches of signals on its own thread, so that broadcasters never block the signals
/// thread: a bounded backlog (the oldest batch is dropped and reported past it), retries with
/// exponential backoff for network errors and retryable statuses (Segment's policy: 408, 429,
/// 5xx except 501/505), a report for every batch given up on.
package final class SignalBatchSender: @unchecked Sendable {
    package struct Batch: Sendable {
        public var body: [UInt8]
        public var signalCount: Int
        public init(body: [UInt8], signalCount: Int) {
            self.body = body
            self.signalCount = signalCount
        }
    }

    package struct Counters: Sendable, Equatable {
        /// Signals in batches the server accepted.
        public var sent = 0
        /// Signals in batches given up on (refused, out of attempts, or pushed out of the backlog).
        public var dropped = 0
        /// Requests made, retries included.
        public var requests = 0
    }

    private let name: String
    private let url: URL
    private let headers: [(name: String, value: String)]
    private let maxAttempts: Int
    private let backlogCapacity: Int
    private let sleeper: RetrySleeper
    private let http = HTTPClient()
    private let policy = RetryPolicy.standard
    private let report: @Sendable (AnalyticsError) -> Void

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var backlog = RingBuffer<Batch>()
    private var inFlight = false
    private var stopping = false
    private var counters = Counters()
    private let finished = DispatchSemaphore(value: 0)

    package init(name: String, url: URL, headers: [(name: String, value: String)], maxAttempts: Int = 5,
                backlogCapacity: Int = 100, sleeper: RetrySleeper = InterruptibleSleeper(),
                report: @escaping @Sendable (AnalyticsError) -> Void) {
        self.name = name
        self.url = url
        self.headers = headers
        self.maxAttempts = max(1, maxAttempts)
        self.backlogCapacity = max(1, backlogCapacity)
        self.sleeper = sleeper
        self.report = report
        let thread = Thread { [self] in run() }
        thread.name = "signals \(name)"
        thread.start()
    }

    package var counts: Counters { condition.lock(); defer { condition.unlock() }; return counters }

    /// Queues a batch; never blocks.
    package func send(_ batch: Batch) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else {
            counters.dropped += batch.signalCount
            report(.delivery("signals \(name): stopped, \(batch.signalCount) signals not sent"))
            return
        }
        if backlog.count >= backlogCapacity, let old = backlog.removeFirst() {
            counters.dropped += old.signalCount
            report(.delivery("signals \(name): \(backlogCapacity) batches waiting, dropped the oldest (\(old.signalCount) signals)"))
        }
        backlog.append(batch)
        condition.broadcast()
    }

    /// Waits until the backlog is empty and no request is in flight (at most `timeout` s).
    package func drain(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !backlog.isEmpty || inFlight {
            if !condition.wait(until: deadline) { return backlog.isEmpty && !inFlight }
        }
        return true
    }

    /// Sends what is queued (bounded by `timeout`), then stops the thread.
    package func stop(timeout: Double) {
        _ = drain(timeout: timeout)
        condition.lock()
        let wasStopping = stopping
        stopping = true
        condition.broadcast()
        condition.unlock()
        if let s = sleeper as? InterruptibleSleeper { s.cancel() }
        if !wasStopping { _ = finished.wait(timeout: .now() + max(0.1, timeout)) }
    }

    private func run() {
        while true {
            condition.lock()
            while backlog.isEmpty && !stopping { condition.wait() }
            guard let batch = backlog.removeFirst() else {
                condition.unlock()
                finished.signal()
                return
            }
            inFlight = true
            condition.unlock()

            let delivered = deliver(batch)

            condition.lock()
            if delivered { counters.sent += batch.signalCount } else { counters.dropped += batch.signalCount }
            inFlight = false
            condition.broadcast()
            condition.unlock()
        }
    }

    private func deliver(_ batch: Batch) -> Bool {
        var request = HTTPRequest(method: "POST", url: url, headers: headers, body: batch.body, timeout: 15)
        var lastProblem = ""
        for attempt in 1...maxAttempts {
            if attempt > 1 { request.headers.append((name: "X-Retry-Count", value: "\(attempt - 1)")) }
            condition.lock(); counters.requests += 1; condition.unlock()
            switch http.send(request) {
            case .success(let response):
                switch policy.classify(status: response.status) {
                case .success: return true
                case .drop:
                    report(.delivery("signals \(name): \(url.absoluteString) refused \(batch.signalCount) signals with HTTP \(response.status); dropped"))
                    return false
                case .retry, .rateLimited:
                    lastProblem = "HTTP \(response.status)"
                }
            case .failure(let error):
                lastProblem = error.description
            }
            request.headers.removeAll { $0.name == "X-Retry-Count" }
            if attempt < maxAttempts {
                let wait = policy.backoff(failures: attempt, random: Double.random(in: 0..<1))
                if !sleeper.sleep(seconds: min(wait, 30)) { break }
            }
        }
        report(.delivery("signals \(name): \(batch.signalCount) signals not sent to \(url.absoluteString) after \(maxAttempts) attempts (\(lastProblem)); dropped"))
        return false
    }
}
