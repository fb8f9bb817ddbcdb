import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The uploader against a real HTTP server on 127.0.0.1.
@Suite struct UploadServerTests {
    static let key = "write-key-123"

    func makeBatch(_ count: Int, size: Int = 200) -> UploadBatch {
        let (batches, rejected) = BatchBuilder.split(TestEvents.tracks(count, size: size), writeKey: Self.key)
        precondition(rejected.isEmpty && batches.count == 1)
        return batches[0]
    }

    func makeUploader(_ server: LoopbackHTTPServer, sleeper: any RetrySleeper, timeout: Double = 5,
                      policy: RetryPolicy = .standard, clock: VirtualClock? = nil) -> Uploader {
        let config = UploadConfiguration(writeKey: Self.key, apiHost: "\(server.baseURL)/v1", requestTimeout: timeout, retryPolicy: policy)
        if let clock {
            return Uploader(configuration: config, sleeper: sleeper, random: { 0 }, clock: { clock.read() })
        }
        return Uploader(configuration: config, sleeper: sleeper, random: { 0 })
    }

    @Test func acceptedBatchArrivesGzippedWithAuthAndEnvelope() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper).deliver(makeBatch(25))
        #expect(outcome.disposition == .delivered)
        #expect(outcome.attempts == 1)
        #expect(sleeper.waits.isEmpty)

        let requests = server.requests
        try #require(requests.count == 1)
        let r = requests[0]
        #expect(r.method == "POST")
        #expect(r.path == "/v1/b")
        #expect(r.header("Content-Encoding") == "gzip")
        #expect(r.header("Content-Type") == "application/json")
        #expect(r.header("X-Retry-Count") == "0")
        let expectedAuth = "Basic " + Data("\(Self.key):".utf8).base64EncodedString()
        #expect(r.header("Authorization") == expectedAuth)
        #expect(r.decodeError == nil)
        #expect(r.wireBodySize < r.body.count)  // it really was compressed

        let json = try JSON(parsing: r.body)
        #expect(json["writeKey"] == .string(Self.key))
        let sentAt = try #require(json["sentAt"]?.stringValue)
        #expect(sentAt.count == 24 && sentAt.hasSuffix("Z") && sentAt.contains("T"))
        let events = try #require(json["batch"]?.arrayValue)
        #expect(events.count == 25)
        #expect(events.map { $0["messageId"]?.stringValue } == (0..<25).map { "m-\($0)" })
    }

    @Test func badRequestDropsTheBatchAndReportsIt() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(400, body: "malformed payload"))
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper).deliver(makeBatch(3))
        #expect(outcome.disposition == .dropped)
        #expect(outcome.attempts == 1)
        #expect(outcome.failure == .status(code: 400, retryAfter: nil, body: "malformed payload"))
        #expect(outcome.description.contains("HTTP 400"))
        #expect(sleeper.waits.isEmpty)
        #expect(server.requestCount == 1)
    }

    @Test(arguments: [401, 403, 404, 413, 422, 501, 505])
    func permanentStatusesDrop(_ code: Int) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(code))
        let outcome = makeUploader(server, sleeper: RecordingSleeper()).deliver(makeBatch(1))
        #expect(outcome.disposition == .dropped)
        #expect(outcome.attempts == 1)
        #expect(server.requestCount == 1)
    }

    @Test(arguments: [408, 410, 460, 500, 502, 503, 504])
    func transientStatusesRetryWithGrowingRetryCount(_ code: Int) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(code), times: 2)
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper).deliver(makeBatch(4))
        #expect(outcome.disposition == .delivered)
        #expect(outcome.attempts == 3)
        #expect(sleeper.waits == [0.5, 1.0])
        #expect(server.requests.map { $0.header("X-Retry-Count") } == ["0", "1", "2"])
        // Every attempt carried the same events.
        let bodies = try server.requests.map { try JSON(parsing: $0.body)["batch"] }
        #expect(bodies.allSatisfy { $0 == bodies[0] })
    }

    @Test func rateLimitWaitsRetryAfter() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(429, headers: [("Retry-After", "7")]))
        server.enqueue(.status(429, headers: [("Retry-After", "100000")]))  // capped at maxRetryInterval
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper).deliver(makeBatch(2))
        #expect(outcome.disposition == .delivered)
        #expect(sleeper.waits == [7, 300])
        #expect(server.requests.map { $0.header("X-Retry-Count") } == ["0", "1", "2"])
    }

    @Test func rateLimitRealWaitOfOneSecond() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(429, headers: [("Retry-After", "1")]))
        let start = monotonicSeconds()
        let outcome = makeUploader(server, sleeper: InterruptibleSleeper()).deliver(makeBatch(2))
        let elapsed = monotonicSeconds() - start
        #expect(outcome.disposition == .delivered)
        #expect(outcome.waits == [1])
        #expect(elapsed >= 0.95)
        #expect(server.requestCount == 2)
    }

    @Test func connectionRefusedIsRetriedUntilTheLimit() throws {
        let server = try LoopbackHTTPServer()
        server.stop()  // the port is now closed: connections are refused
        var policy = RetryPolicy.standard
        policy.maxRetryCount = 3
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper, policy: policy).deliver(makeBatch(1))
        #expect(outcome.disposition == .dropped)
        #expect(outcome.attempts == 4)
        #expect(sleeper.waits == [0.5, 1, 2])
        guard case .network = outcome.failure else {
            Issue.record("expected a network failure, got \(String(describing: outcome.failure))")
            return
        }
    }

    @Test func connectionClosedWithoutAnswerIsRetried() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.close)
        let sleeper = RecordingSleeper()
        let outcome = makeUploader(server, sleeper: sleeper).deliver(makeBatch(1))
        #expect(outcome.disposition == .delivered)
        #expect(outcome.attempts == 2)
        #expect(sleeper.waits == [0.5])
    }

    @Test func hungServerTimesOutAndIsRetried() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.hang)
        let sleeper = RecordingSleeper()
        let uploader = makeUploader(server, sleeper: sleeper, timeout: 1)
        var start = monotonicSeconds()
        let first = uploader.attempt(makeBatch(1))
        #expect(first == .failed(.timedOut(after: 1)))
        #expect(monotonicSeconds() - start < 3)
        server.enqueue(.hang)
        start = monotonicSeconds()
        let outcome = uploader.deliver(makeBatch(1))
        #expect(monotonicSeconds() - start < 4)
        #expect(outcome.disposition == .delivered)
        #expect(outcome.attempts == 2)
        #expect(sleeper.waits == [0.5])
        #expect(server.requests.last?.header("X-Retry-Count") == "1")
    }

    @Test func totalRetryTimeIsLimited() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.defaultResponse = .status(503)
        var policy = RetryPolicy.standard
        policy.maxTotalBackoffDuration = 60
        let clock = VirtualClock()
        let sleeper = RecordingSleeper(clock: clock)
        let outcome = makeUploader(server, sleeper: sleeper, policy: policy, clock: clock).deliver(makeBatch(1))
        #expect(outcome.disposition == .dropped)
        #expect(sleeper.waits == [0.5, 1, 2, 4, 8, 16])  // 31.5 s; the next 32 s wait would pass 60 s
        #expect(outcome.reason.contains("longer than 60"))
    }

    @Test func cancelledWaitDefersTheBatchWithItsRetryCount() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.defaultResponse = .status(500)
        let outcome = makeUploader(server, sleeper: RecordingSleeper(cancelAfter: 2)).deliver(makeBatch(1), retryCount: 5)
        #expect(outcome.disposition == .deferred)
        #expect(outcome.attempts == 2)
        #expect(outcome.nextRetryCount == 7)
        #expect(server.requests.map { $0.header("X-Retry-Count") } == ["5", "6"])
    }

    @Test func interruptibleSleeperIsCutShortByCancel() {
        let sleeper = InterruptibleSleeper()
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Bool?>(nil)
        Thread.detachNewThread {
            result.withLock { $0 = sleeper.sleep(seconds: 60) }
            done.signal()
        }
        sleeper.cancel()
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(result.withLock { $0 } == false)
        #expect(sleeper.sleep(seconds: 60) == false)
        sleeper.reset()
        #expect(sleeper.sleep(seconds: 0.01) == true)
    }

    @Test func settingsHttpConfigChangesTheOutcome() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let uploader = makeUploader(server, sleeper: RecordingSleeper())
        let settings = try JSON(parsing: #"{"integrations":{"Segment.io":{"httpConfig":{"backoffConfig":{"statusCodeOverrides":{"400":"retry"}}}}}}"#).objectValue!
        uploader.update(retryPolicy: RetryPolicy.parse(settings: settings).policy)
        server.enqueue(.status(400))
        #expect(uploader.deliver(makeBatch(1)).disposition == .delivered)

        var legacy = RetryPolicy.standard
        legacy.backoffEnabled = false
        uploader.update(retryPolicy: legacy)
        server.enqueue(.status(500))
        let outcome = uploader.deliver(makeBatch(1))
        #expect(outcome.disposition == .deferred)
        #expect(outcome.nextRetryCount == 1)
    }

    @Test func invalidHostIsReportedNotCrashed() throws {
        let uploader = Uploader(configuration: UploadConfiguration(writeKey: "k", apiHost: "ftp://x/v1"), sleeper: RecordingSleeper())
        let outcome = uploader.deliver(makeBatch(1))
        #expect(outcome.disposition == .dropped)
        guard case .invalidEndpoint = outcome.failure else {
            Issue.record("expected invalidEndpoint, got \(String(describing: outcome.failure))")
            return
        }
        #expect(throws: UploadEndpointError.self) { try UploadConfiguration(writeKey: "k", apiHost: "  ").batchURL() }
        #expect(try UploadConfiguration(writeKey: "k").batchURL().absoluteString == "https://api.segment.io/v1/b")
        #expect(try UploadConfiguration(writeKey: "k", apiHost: "http://127.0.0.1:9/v1/").batchURL().absoluteString == "http://127.0.0.1:9/v1/b")
    }

    @Test func compressionCanBeTurnedOff() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let config = UploadConfiguration(writeKey: Self.key, apiHost: "\(server.baseURL)/v1", compressionLevel: 0)
        let outcome = Uploader(configuration: config, sleeper: RecordingSleeper()).deliver(makeBatch(3))
        #expect(outcome.disposition == .delivered)
        let r = try #require(server.requests.first)
        #expect(r.header("Content-Encoding") == nil)
        #expect(r.wireBodySize == r.body.count)
        #expect(try JSON(parsing: r.body)["batch"]?.arrayValue?.count == 3)
    }

    @Test func serverKeepsConnectionsAlive() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let uploader = makeUploader(server, sleeper: RecordingSleeper())
        for _ in 0..<20 { #expect(uploader.deliver(makeBatch(2)).disposition == .delivered) }
        #expect(server.waitForRequests(20, timeout: 5))
        #expect(server.connectionCount < 20)
    }
}
