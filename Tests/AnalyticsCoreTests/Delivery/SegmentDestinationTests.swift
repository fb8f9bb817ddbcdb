import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// The built-in Segment.io destination through a real client, uploading to a real HTTP server on
/// 127.0.0.1, with its queue on a real disk.
@Suite struct SegmentDestinationTests {
    @Test func acceptedEventsArriveByMessageIdGzippedWithAuthAndSentAt() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 20)
        for i in 0..<45 {
            h.analytics.track("Order \(i)", properties: ["i": .number(Double(i))])
        }
        #expect(h.analytics.flush())
        let batches = try server.batches()
        let received = batches.flatMap(\.messageIds)
        #expect(received.count == 45 && Set(received).count == 45, "every event once: \(received.count)")
        #expect(h.segment.uploadedEvents == 45)
        #expect(h.stats.queued == 0 && h.stats.failed == 0)
        #expect(h.segment.queueDirectory == h.directory + "/queue")
        #expect(FileManager.default.fileExists(atPath: h.directory + "/queue/LOCK"), "the queue lives in <storage>/queue")

        // The body carries the events exactly as the client encoded them.
        let first = try JSON(parsing: batches[0].request.body)
        #expect(first["batch"]?[0]?["event"] == "Order 0")
        #expect(first["batch"]?[0]?["context"]?["os"]?["name"] == "Linux", "enriched as it fanned out")
        let credentials = Data("\(SegmentHarness.writeKey):".utf8).base64EncodedString()
        for b in batches {
            #expect(b.request.method == "POST" && b.request.path == "/v1/b")
            #expect(b.request.header("Content-Encoding") == "gzip" && b.request.decodeError == nil)
            #expect(b.request.wireBodySize < b.request.body.count, "compressed on the wire")
            #expect(b.request.header("Authorization") == "Basic \(credentials)")
            #expect(b.request.header("X-Retry-Count") == "0")
            #expect(b.writeKey == SegmentHarness.writeKey)
            let sentAt = try #require(b.sentAt)
            #expect(sentAt.count == 24 && sentAt.hasSuffix("Z"), "ISO-8601 with milliseconds: \(sentAt)")
        }
        #expect(h.errors.all.isEmpty, "\(h.errors.messages)")
        #expect(h.analytics.shutdown())
    }

    @Test func flushAtPendingEventsStartsAnUploadWithoutFlush() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 10)
        for i in 0..<9 { h.analytics.track("E\(i)") }
        // Nine are below flushAt: the stored events stay on disk until the tenth.
        #expect(eventually { h.stats.delivered == 9 })
        #expect(server.requestCount == 0)
        h.analytics.track("E9")
        #expect(server.waitForRequests(1, timeout: 10))
        #expect(eventually { h.segment.uploadedEvents == 10 })
        #expect(h.analytics.shutdown())
    }

    @Test func flushIntervalUploadsWhatIsPending() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 1000) { $0.flushInterval = 0.2 }
        for i in 0..<3 { h.analytics.track("Timed \(i)") }
        #expect(server.waitForRequests(1, timeout: 10))
        #expect(eventually { h.segment.uploadedEvents == 3 })
        #expect(h.analytics.shutdown())
    }

    @Test func badRequestDropsTheEventAndReportsIt() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(400, body: #"{"error":"malformed"}"#))
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        h.analytics.track("Bad")
        #expect(h.analytics.flush())
        #expect(server.requestCount == 1, "a 400 is not retried")
        #expect(h.stats.failed == 1 && h.stats.queued == 0)
        let id = try #require(try server.messageIds().first)
        let report = h.errors.messages.first { $0.contains("event messageId \(id) refused by") }
        #expect(report?.contains("HTTP 400: {\"error\":\"malformed\"}") == true, "\(h.errors.messages)")
        #expect(h.segment.refusedByServer.map(\.event) == ["messageId \(id)"])

        // The queue moved past the bad event: later events go out.
        h.analytics.track("Good")
        #expect(h.analytics.flush())
        #expect(try server.batches().last?.messageIds.count == 1)
        #expect(h.segment.uploadedEvents == 1)
        #expect(h.analytics.shutdown())
    }

    /// A 400 to a batch of several events sends its halves again: a batch refused once (for
    /// whatever reason) loses nothing the server accepts on its own.
    @Test func badRequestToABatchSendsItsHalvesAgain() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(400, body: "once"))
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 100)
        for i in 0..<5 { h.analytics.track("Event \(i)") }
        #expect(h.analytics.flush())
        #expect(try server.batches().map(\.messageIds.count) == [5, 2, 3])
        #expect(h.stats.failed == 0 && h.stats.queued == 0)
        #expect(h.segment.uploadedEvents == 5)
        #expect(h.analytics.shutdown())
    }

    /// A split cut short (a part deferred: backoff disabled by httpConfig, a 500) resumes where it
    /// stopped at the next flush: what was settled is neither sent nor counted again.
    @Test func aSplitCutShortResumesWithoutSendingSettledEventsAgain() throws {
        let count = Locked(0)
        let server = try LoopbackHTTPServer(options: .init(respond: { request in
            let n = count.withLock { $0 += 1; return $0 }
            if n == 7 { return .status(500, body: "later") }
            return request.bodyText.contains(#""event":"Bad""#) ? .status(400, body: "bad event") : nil
        }))
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", flushAt: 100, httpConfig: ["backoffConfig": ["enabled": false]])
        for i in 0..<8 { h.analytics.track(i == 1 ? "Bad" : "E\(i)") }
        _ = h.analytics.flush()
        #expect(server.requestCount == 7, "400, halves down to the bad event, then the last part deferred")
        #expect(h.stats.queued == 8, "nothing acknowledged yet")
        _ = h.analytics.flush()
        let ids = try server.requests.enumerated().filter { $0.offset != 6 }.map(\.element).filter { !$0.bodyText.contains(#""event":"Bad""#) }
            .flatMap { try ReceivedBatch($0).messageIds }
        #expect(ids.count == 7 && Set(ids).count == 7, "each good event delivered once: \(ids)")
        #expect(server.requestCount == 8, "only the deferred part went again")
        #expect(h.segment.uploadedEvents == 7 && h.stats.failed == 1 && h.stats.queued == 0)
        #expect(h.analytics.shutdown())
    }

    @Test func rateLimitWaitsRetryAfterThenDelivers() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(429, headers: [("Retry-After", "1")]))
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        for i in 0..<3 { h.analytics.track("Limited \(i)") }
        let start = monotonicSeconds()
        h.analytics.flush()
        #expect(monotonicSeconds() - start < 1, "flush does not sit out the Retry-After")
        #expect(h.stats.queued == 3, "still on disk during the wait")
        #expect(server.waitForRequests(2, timeout: 10))
        let elapsed = monotonicSeconds() - start
        #expect(elapsed >= 0.95, "waited Retry-After: \(elapsed)")
        let requests = server.requests
        #expect(requests[1].header("X-Retry-Count") == "1")
        #expect(eventually { h.segment.uploadedEvents == 3 && h.stats.queued == 0 })
        #expect(try ReceivedBatch(requests[1]).messageIds == (try ReceivedBatch(requests[0]).messageIds))
        // The failed attempt was told at once (once), though the batch was then delivered.
        #expect(h.errors.messages.count == 1 && h.errors.messages.first?.contains("failed: HTTP 429") == true, "\(h.errors.messages)")
        #expect(h.analytics.shutdown())
    }

    @Test func serverErrorIsRetriedWithBackoffThenDelivered() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(500))
        server.enqueue(.status(503))
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        for i in 0..<4 { h.analytics.track("Retry \(i)") }
        h.analytics.flush()
        #expect(server.waitForRequests(3, timeout: 10))
        #expect(server.requests.map { $0.header("X-Retry-Count") } == ["0", "1", "2"])
        #expect(eventually { h.segment.uploadedEvents == 4 })
        // Each failed attempt's cause was told once; nothing failed for good.
        #expect(h.stats.failed == 0, "\(h.errors.messages)")
        #expect(h.errors.messages.count == 2 && h.errors.messages[0].contains("failed: HTTP 500")
                && h.errors.messages[1].contains("failed: HTTP 503"), "\(h.errors.messages)")
        #expect(h.analytics.shutdown())
    }

    @Test func connectionRefusedKeepsEventsQueuedForTheNextClient() throws {
        let port = try refusedPort()
        let dir = makeTempDirectory("segment-offline")
        let first = SegmentHarness(apiHost: "http://127.0.0.1:\(port)/v1", directory: dir, extraKeys: ["Probe"])
        var ids: Set<String> = []
        let probe = RecordingDestination("Probe")
        first.analytics.add(plugin: probe)
        for i in 0..<30 { first.analytics.track("Offline \(i)") }
        let start = monotonicSeconds()
        first.analytics.flush()
        #expect(monotonicSeconds() - start < 3, "flush returns soon when the network is down")
        #expect(first.stats.queued == 30 && first.stats.failed == 0)
        ids = Set(probe.events.compactMap(\.messageId))
        #expect(ids.count == 30)
        #expect(first.analytics.shutdown())
        #expect(!first.errors.messages.contains { $0.contains("dropped") }, "\(first.errors.messages)")

        // The server comes up; a new client on the same storage uploads what the first one kept.
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let second = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir)
        #expect(try server.waitForMessageIds(ids))
        #expect(try server.messageIds().count == 30, "each once")
        #expect(eventually { second.stats.queued == 0 })
        #expect(second.errors.all.isEmpty, "\(second.errors.messages)")
        #expect(second.analytics.shutdown())
    }

    @Test func hangingServerTimesOutAndIsRetried() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.hang)
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        for i in 0..<6 { h.analytics.track("Slow \(i)") }
        let start = monotonicSeconds()
        h.analytics.flush()
        #expect(monotonicSeconds() - start < 4.5, "flush returns once the attempt timed out")
        #expect(server.waitForRequests(2, timeout: 15))
        #expect(server.requests[1].header("X-Retry-Count") == "1")
        #expect(eventually(timeout: 15) { h.segment.uploadedEvents == 6 })
        #expect(try Set(server.batches()[1].messageIds).count == 6)
        #expect(h.analytics.shutdown())
    }

    @Test func oversizedEventIsRejectedAtCallTimeAndNeverQueued() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", extraKeys: ["Other"])
        let other = RecordingDestination("Other")
        h.analytics.add(plugin: other)
        h.analytics.track("Huge", properties: ["blob": .string(String(repeating: "x", count: 40_000))])
        // Reported before track() returned, on the caller's thread.
        let messages = h.errors.messages
        #expect(messages.count == 1, "\(messages)")
        #expect(messages.first?.contains("Segment.io: track \"Huge\"") == true)
        #expect(messages.first?.contains("over the API's limit of 32768 bytes") == true)
        h.analytics.track("Small")
        #expect(h.analytics.flush())
        #expect(try server.batches().flatMap { $0.messageIds }.count == 1)
        #expect(h.stats.failed == 1 && h.segment.uploadedEvents == 1)
        #expect(other.names == ["Huge", "Small"], "other destinations still get it")
        #expect(h.errors.all.count == 1, "reported once: \(h.errors.messages)")
        #expect(h.analytics.shutdown())
    }

    @Test func callTimeSizeBoundIsNeverBelowTheEncodedSize() throws {
        let samples: [JSONObject] = [
            [:],
            ["a": "plain", "n": 1.5, "b": true, "z": .null],
            ["ctrl": .string(String(repeating: "\u{1}", count: 100)), "quote": "\"\\/", "uni": "é€😀"],
            ["deep": ["list": [1, "two", ["three": [.null, false]]], "empty": [:]]],
            ["big": .string(String(repeating: "x", count: 10_000)), "keys \u{2}": "v"],
            // Numbers keep their exact text, however long.
            ["n": .number(JSONNumber(text: String(repeating: "9", count: 300))!)],
        ]
        for payload in samples {
            let size = JSON.object(payload).serializedBytes().count
            #expect(SegmentEventSizeBound.mayExceed(payload, limit: size - 1), "bound below the size for \(payload)")
        }
        #expect(!SegmentEventSizeBound.mayExceed(["event": "Small", "properties": ["a": 1]], limit: 32_768))
        // A string that escapes to more than the limit is caught even though it has fewer bytes.
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1")
        h.analytics.track("Escaped", properties: ["ctrl": .string(String(repeating: "\u{1}", count: 6_000))])
        #expect(h.errors.messages.count == 1 && h.errors.messages[0].contains("Segment.io: track \"Escaped\""))
        #expect(h.analytics.flush() && h.stats.failed == 1 && server.requestCount == 0)
        #expect(h.analytics.shutdown())
    }

    @Test func secondClientOnTheSameStorageGetsTheLockErrorAndRefusesEvents() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let dir = makeTempDirectory("segment-locked")
        let first = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir)
        let second = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir)
        let lock = second.errors.messages.first { $0.contains("cannot open the upload queue") }
        #expect(lock?.contains("is in use") == true && lock?.contains("\(dir)/queue") == true, "\(second.errors.messages)")
        #expect(second.segment.storageError != nil)
        for i in 0..<3 { second.analytics.track("Refused \(i)") }
        first.analytics.track("Fine")
        #expect(second.analytics.flush() && first.analytics.flush())
        #expect(second.stats.failed == 3)
        // The first refusal is reported at once, the rest in one line at the flush.
        let refusals = second.errors.messages.filter { $0.contains("refused") && $0.contains("is not open") }
        #expect(refusals.count == 2 && refusals[0].contains("refused 1 event(s)") && refusals[1].contains("refused 2 event(s)"),
                "\(second.errors.messages)")
        #expect(try server.messageIds().count == 1)
        #expect(first.errors.all.isEmpty)
        #expect(second.analytics.shutdown() && first.analytics.shutdown())
    }

    @Test func httpConfigFromARefreshChangesTheRetryPolicy() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", httpConfig: nil)
        #expect(eventually { h.segment.uploadConfiguration.retryPolicy == .standard })
        let refreshed = try Settings(parsing: #"""
            {"integrations":{"Segment.io":{"apiKey":"seg-key","httpConfig":{"backoffConfig":{
              "baseBackoffInterval":0.1,"statusCodeOverrides":{"400":"retry"}}}}}}
            """#)
        h.analytics.update(settings: refreshed)
        #expect(eventually { h.segment.uploadConfiguration.retryPolicy.classify(status: 400) == .retry })
        #expect(h.segment.uploadConfiguration.retryPolicy.baseBackoffInterval == 0.1)
        server.enqueue(.status(400))
        h.analytics.track("Now retried")
        h.analytics.flush()
        #expect(server.waitForRequests(2, timeout: 10))
        #expect(eventually { h.segment.uploadedEvents == 1 })
        #expect(h.stats.failed == 0, "\(h.errors.messages)")
        #expect(h.errors.messages.count == 1 && h.errors.messages.first?.contains("failed: HTTP 400") == true, "\(h.errors.messages)")
        #expect(h.analytics.shutdown())
    }

    @Test func diskCapDropsTheOldestAndReportsIt() throws {
        let port = try refusedPort()
        let h = SegmentHarness(apiHost: "http://127.0.0.1:\(port)/v1", flushAt: 1_000_000) { $0.maxQueueBytes = 40_000 }
        for i in 0..<400 { h.analytics.track("Capped \(i)", properties: ["pad": .string(String(repeating: "p", count: 200))]) }
        #expect(h.analytics.flush())
        #expect(eventually { h.stats.delivered == 400 })
        let dropped = h.errors.messages.filter { $0.contains("disk cap") }
        #expect(!dropped.isEmpty, "\(h.errors.messages.prefix(3))")
        #expect(h.stats.failed > 0 && h.stats.failed < 400)
        #expect(h.stats.queued + h.stats.failed == 400, "queued \(h.stats.queued) failed \(h.stats.failed)")
        #expect(h.analytics.shutdown())
    }

    @Test func turnedOffOrAbsentFromSettingsMeansNoSegmentDestination() throws {
        let off = SegmentHarness(apiHost: nil) { $0.autoAddSegmentDestination = false }
        #expect(off.analytics.find(key: "Segment.io") == nil)
        let (absent, _) = makeClient(["A"])
        #expect(absent.find(key: "Segment.io") == nil)
        #expect(off.analytics.shutdown() && absent.shutdown())
    }

    @Test func aRefreshThatRemovesTheKeyClosesTheQueue() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let dir = makeTempDirectory("segment-removed")
        let h = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir)
        h.analytics.track("Before")
        h.analytics.update(settings: settings(enabling: ["A"]))
        #expect(h.analytics.find(key: "Segment.io") == nil)
        // The lock is free again: another client can open the queue (and uploads what was left).
        let next = SegmentHarness(apiHost: "\(server.baseURL)/v1", directory: dir)
        #expect(next.segment.storageError == nil)
        next.analytics.flush()
        #expect(try server.messageIds().count == 1)
        #expect(h.analytics.shutdown() && next.analytics.shutdown())
    }
}
