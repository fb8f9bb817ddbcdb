import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Failed uploads are told to the application as they happen, once per cause and destination,
/// with the host, the error and the fix; `flush(completion:)` says what was and was not delivered;
/// `shutdown()` with memory storage reports the events it cannot keep. Against real sockets: a
/// port that refuses connections, https to a plain-HTTP server.
@Suite struct UploadFailureReportTests {
    /// A port on 127.0.0.1 that refuses connections: a server bound it, then closed it.
    static func refusingPort() throws -> Int {
        let server = try LoopbackHTTPServer()
        let port = server.port
        server.stop()
        return Int(port)
    }

    static func flushResult(_ analytics: Analytics) -> FlushResult {
        let box = Locked<FlushResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        analytics.flush { (result: FlushResult) in
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 }!
    }

    @Test func aRefusedConnectionReachesTheErrorAndLogHandlersOnceWithTheHostAndTheFix() throws {
        let port = try Self.refusingPort()
        let logs = LogLines()
        let host = "http://127.0.0.1:\(port)/v1"
        let h = SegmentHarness(apiHost: host) { $0.logHandler = logs.logHandler }
        for i in 0..<5 { h.analytics.track("E\(i)") }

        let first = Self.flushResult(h.analytics)
        #expect(first.uploaded == 0 && first.pending == 5 && !first.deliveredEverything, "\(first)")
        #expect(first.problem?.contains("127.0.0.1:\(port)") == true, "\(first)")
        let second = Self.flushResult(h.analytics)
        #expect(second.pending == 5)

        let reports = h.errors.messages.filter { $0.contains("upload to") }
        #expect(reports.count == 1, "once per cause, however many attempts: \(h.errors.messages)")
        let report = try #require(reports.first)
        #expect(report.contains("Segment.io: upload to \(host) failed: connection refused"), "\(report)")
        #expect(report.contains("check apiHost (host and port)"), "\(report)")
        #expect(logs.all.contains(String(report.dropFirst("delivery: ".count))), "the log handler got it too: \(logs.all)")
        #expect(h.segment.pendingEvents == 5, "kept for a later attempt")
        h.analytics.shutdown()
    }

    @Test func httpsToAPlainHTTPServerSaysToWriteHTTP() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let plain = "127.0.0.1:\(server.port)/v1"
        let h = SegmentHarness(apiHost: "https://\(plain)")
        for i in 0..<3 { h.analytics.track("E\(i)") }
        let result = Self.flushResult(h.analytics)
        #expect(result.pending == 3 && result.uploaded == 0, "\(result)")
        let reports = h.errors.messages.filter { $0.contains("upload to") }
        #expect(reports.count == 1, "\(h.errors.messages)")
        #expect(reports.first?.contains("write apiHost as http://\(plain)") == true, "\(reports)")
        #expect(try server.batches().isEmpty)
        h.analytics.shutdown()
    }

    @Test func aFlushThatDeliversEverythingSaysSo() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        for i in 0..<7 { h.analytics.track("E\(i)") }
        let result = Self.flushResult(h.analytics)
        #expect(result.deliveredEverything && result.uploaded == 7 && result.pending == 0 && result.problem == nil, "\(result)")
        #expect(h.errors.all.isEmpty, "\(h.errors.messages)")
        h.analytics.shutdown()
    }

    @Test func aCauseIsReportedOncePerOutage() throws {
        let errors = ErrorLog()
        let logs = LogLines()
        let reports = UploadFailureReports(destination: "Segment.io", report: errors.handler, log: logs.logHandler)
        reports.failed(.network("Could not connect to the server."), apiHost: "h")
        reports.failed(.network("Could not connect to the server."), apiHost: "h")
        reports.failed(.status(code: 500, retryAfter: nil, body: ""), apiHost: "h")
        reports.failed(.network("Could not connect to the server."), apiHost: "other")
        reports.succeeded()
        reports.failed(.network("Could not connect to the server."), apiHost: "h")
        #expect(errors.messages == [
            "delivery: Segment.io: upload to h failed: connection refused (network error: Could not connect to the server.). Nothing accepts connections there: check apiHost (host and port) and that the server runs. The events stay queued and are retried.",
            "delivery: Segment.io: upload to h failed: HTTP 500 (HTTP 500). The server failed. The events stay queued and are retried.",
            "delivery: Segment.io: upload to other failed: connection refused (network error: Could not connect to the server.). Nothing accepts connections there: check apiHost (host and port) and that the server runs. The events stay queued and are retried.",
            "delivery: Segment.io: upload to h failed: connection refused (network error: Could not connect to the server.). Nothing accepts connections there: check apiHost (host and port) and that the server runs. The events stay queued and are retried.",
        ], "refused, 500, another host, refused again after a success")
        #expect(logs.all.count == 4)
        let quiet = UploadFailureReports(destination: "Segment.io", report: errors.handler, log: nil)
        quiet.failed(.timedOut(after: 1), apiHost: "api.segment.io/v1")
        #expect(errors.messages.last?.contains("write apiHost as http://api.segment.io/v1") == true, "https by default: \(errors.messages)")
    }

    @Test func shutdownWithMemoryStorageReportsTheEventsItDiscards() throws {
        let port = try Self.refusingPort()
        let logs = LogLines()
        let h = SegmentHarness(apiHost: "http://127.0.0.1:\(port)/v1") {
            $0.storageMode = .memory(100)
            $0.logHandler = logs.logHandler
            $0.flushTimeout = 2
        }
        for i in 0..<4 { h.analytics.track("E\(i)") }
        let directory = h.analytics.configuration.storageDirectory
        h.analytics.shutdown()
        let discarded = h.errors.messages.filter { $0.contains("discarded with the memory storage") }
        #expect(discarded.count == 1, "\(h.errors.messages)")
        #expect(discarded.first?.contains("shutdown: 4 Segment.io event(s) not yet uploaded") == true, "\(discarded)")
        #expect(discarded.first?.contains("127.0.0.1:\(port)") == true, "the reason: \(discarded)")
        #expect(logs.all.contains { $0.contains("discarded with the memory storage") })
        #expect(h.stats.failed == 4, "counted as failed")
        #expect(!FileManager.default.fileExists(atPath: directory), "memory storage left nothing")
    }

    @Test func shutdownOnDiskLogsWhatWaitsForTheNextRun() throws {
        let port = try Self.refusingPort()
        let logs = LogLines()
        let h = SegmentHarness(apiHost: "http://127.0.0.1:\(port)/v1") {
            $0.logHandler = logs.logHandler
            $0.flushTimeout = 2
        }
        for i in 0..<2 { h.analytics.track("E\(i)") }
        h.analytics.shutdown()
        #expect(logs.all.contains { $0.contains("2 Segment.io event(s) not yet uploaded") && $0.contains("for the next run") }, "\(logs.all)")
        #expect(!h.errors.messages.contains { $0.contains("discarded") })
    }
}
