import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `AH_EXT_HTTP_REQUESTS` (ABI 1.3) from a real library (Tests/Fixtures/uploader.c, which starts
/// its uploads when the host has started and logs every outcome) against the loopback server,
/// in-process and in a runner process (where the host makes the request for the runner).
@Suite struct HostHTTPRequestsTests {
    func client(_ settings: JSONObject, mode: IsolationMode) throws -> ExtensionClient {
        try ExtensionClient(libraries: [ExtensionClient.Library(fixture: "uploader", name: "uploader")],
                            settings: ["integrations": ["Uploader": .object(settings)]], mode: mode)
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aGzippedPutWithHeadersReachesTheServerAndTheAnswerCarriesStatusRetryAfterAndBody(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(429, headers: [("Retry-After", "7")], body: "slow down"), path: "/v1/batch")
        let c = try client(["url": .string(server.baseURL + "/v1/batch"), "method": "PUT", "gzip": true], mode: mode)
        defer { _ = c.analytics.shutdown() }
        // The answer may come (on a host thread) before the library logs that `start` returned.
        #expect(eventually { !c.lines(of: "Uploader", starting: "done ").isEmpty && !c.lines(of: "Uploader", starting: "start ").isEmpty })
        #expect(c.lines(of: "Uploader", starting: "start ") == ["start i=0 result=0 id=1 err="])
        #expect(c.lines(of: "Uploader", starting: "done ") == ["done id=1 outcome=0 status=429 retry-after=7 body=slow down err="])
        let request = try #require(server.requests.first)
        #expect(request.method == "PUT")
        #expect(request.header("X-Request") == "0")
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("Content-Encoding") == "gzip")
        #expect(request.decodeError == nil)
        #expect(request.bodyText == #"{"n":0}"#)
        #expect(c.lines(of: "Uploader", starting: "max_in_flight=") == ["max_in_flight=\(HTTPRequestsInFlight.maxInFlight)"])
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func theBoundRefusesExtraRequestsAndDestroyCancelsThoseRunningFirst(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.hang, times: 6)
        let c = try client(["url": .string(server.baseURL + "/slow"), "requests": 6], mode: mode)
        #expect(eventually { c.lines(of: "Uploader", starting: "start ").count == 6 })
        let starts = c.lines(of: "Uploader", starting: "start ")
        #expect(starts.prefix(4) == ["start i=0 result=0 id=1 err=", "start i=1 result=0 id=2 err=",
                                     "start i=2 result=0 id=3 err=", "start i=3 result=0 id=4 err="])
        for refused in starts.suffix(2) {
            #expect(refused.contains("result=1 id=0 err=4 requests of Uploader are running (the bound per instance)"))
        }
        #expect(server.waitForRequests(4))
        _ = c.analytics.shutdown()
        let lines = c.lines(of: "Uploader")
        let dones = lines.filter { $0.hasPrefix("done ") }
        #expect(Set(dones) == Set((1...4).map {
            "done id=\($0) outcome=1 status=0 retry-after= body= err=cancelled: the instance is ending before the request finished"
        }))
        // Every request completed before destroy, which saw none open.
        #expect(lines.last == "destroy open=0")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func destroyWaitsForADoneCallbackStillRunning(mode: IsolationMode) throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let c = try client(["url": .string(server.baseURL + "/fast"), "doneDelayMs": 600], mode: mode)
        // The answer came and its callback is in its 600 ms: the instance ends now.
        #expect(eventually { !c.lines(of: "Uploader", starting: "done ").isEmpty })
        _ = c.analytics.shutdown()
        let lines = c.lines(of: "Uploader")
        #expect(!lines.contains("destroy while a done callback runs"), "\(lines)")
        #expect(lines.last == "destroy open=0", "\(lines)")
    }

    @Test(arguments: [IsolationMode.inProcess, .process])
    func aMalformedURLIsRefusedAtOnceAndARefusedConnectionCompletesRetryable(mode: IsolationMode) throws {
        let bad = try client(["url": "not a url"], mode: mode)
        #expect(eventually { !bad.lines(of: "Uploader", starting: "start ").isEmpty })
        #expect(bad.lines(of: "Uploader", starting: "start ") == [#"start i=0 result=2 id=0 err="not a url" is not an http or https URL"#])
        _ = bad.analytics.shutdown()
        #expect(bad.lines(of: "Uploader", starting: "done ").isEmpty)

        let port = try refusedPort()
        let refused = try client(["url": .string("http://127.0.0.1:\(port)/x")], mode: mode)
        defer { _ = refused.analytics.shutdown() }
        #expect(eventually { !refused.lines(of: "Uploader", starting: "done ").isEmpty })
        let done = try #require(refused.lines(of: "Uploader", starting: "done ").first)
        #expect(done.hasPrefix("done id=1 outcome=1 status=0 retry-after= body= err=http://127.0.0.1:\(port)/x"))
    }
}
