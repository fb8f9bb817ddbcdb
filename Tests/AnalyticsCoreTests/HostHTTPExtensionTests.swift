import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// `AH_EXT_HTTP` from a real library (Tests/Fixtures/timeline_plugins.c GETs its `fetch` option
/// when started, on its own thread) against the loopback server.
@Suite struct HostHTTPExtensionTests {
    /// Starts a library whose options ask it to fetch `url`; returns its "http result=…" line.
    func fetch(_ url: String, stopSink: Bool = false) throws -> String? {
        var options: JSONObject = ["fetch": .string(url)]
        if stopSink { options["stopSink"] = true }
        let c = try ExtensionClient(libraries: [ExtensionClient.Library(name: "t", defines: ["NO_PLUGIN"])],
                                    settings: ["integrations": [:]], pluginOptions: ["Timeliner": options])
        defer { _ = c.analytics.shutdown() }
        // A flush waits for the instance's thread, where the start (and the GET) ran first.
        #expect(c.analytics.flush())
        return c.lines(of: "Timeliner", starting: "http result=").first
    }

    @Test func aGetDeliversTheBodyToTheSinkWithTheStatus() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: "console.log('bundle v3')"), path: "/bundle.js")
        server.enqueue(.status(404, body: "no such bundle"), path: "/missing.js")
        #expect(try fetch(server.baseURL + "/bundle.js") == "http result=0 status=200 body=console.log('bundle v3') err=")
        #expect(try fetch(server.baseURL + "/missing.js") == "http result=0 status=404 body=no such bundle err=")
        #expect(server.requests.map(\.method) == ["GET", "GET"])
    }

    @Test func networkErrorsAreRetryableAndBadURLsOrAStoppedSinkArePermanent() throws {
        let refused = try fetch("http://127.0.0.1:\(try refusedPort())/bundle.js")
        #expect(refused?.hasPrefix("http result=1 status=0 body= err=http://127.0.0.1:") == true)
        #expect(try fetch("not a url") == "http result=2 status=0 body= err=\"not a url\" is not an http or https URL")
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.status(200, body: "abc"))
        let stopped = try fetch(server.baseURL + "/x", stopSink: true)
        #expect(stopped?.hasPrefix("http result=2 status=200 body= err=the sink stopped the transfer") == true)
    }

    @Test func aServerThatDoesNotAnswerTimesOut() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.hang)
        let started = monotonicSeconds()
        let line = try fetch(server.baseURL + "/slow.js")
        #expect(line?.hasPrefix("http result=1 status=0 body= err=") == true)
        #expect(line?.contains("response within") == true, "\(line ?? "no line")")
        #expect(monotonicSeconds() - started < 8)
    }
}
