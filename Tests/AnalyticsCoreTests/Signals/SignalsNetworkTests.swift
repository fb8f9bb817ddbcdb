import AnalyticsTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import AnalyticsCore

/// Network signals from an app's URLSession (NetworkSignalsProtocol) against the loopback server.
@Suite(.serialized) struct SignalsNetworkTests {
    private func fetch(_ session: URLSession, _ url: String, body: String? = nil) -> (Int, String) {
        var request = URLRequest(url: URL(string: url)!)
        if let body {
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let done = DispatchSemaphore(value: 0)
        let result = Locked<(Int, String)>((0, ""))
        session.dataTask(with: request) { data, response, _ in
            result.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode ?? 0, data.map { String(decoding: $0, as: UTF8.self) } ?? "") }
            done.signal()
        }.resume()
        _ = done.wait(timeout: .now() + 10)
        return result.withLock { $0 }
    }

    @Test func hostRulesHonourWildcardsAndAlwaysBlockSegment() {
        let rules = NetworkHostRules(allowed: ["*.example.com", "api.myapp.com"], blocked: ["internal.example.com"])
        #expect(rules.observes(host: "shop.example.com") && rules.observes(host: "A.B.Example.COM"))
        #expect(!rules.observes(host: "example.com") && !rules.observes(host: "badexample.com"))
        #expect(rules.observes(host: "api.myapp.com") && !rules.observes(host: "www.myapp.com"))
        #expect(!rules.observes(host: "internal.example.com"))
        let all = NetworkHostRules()
        #expect(all.observes(host: "127.0.0.1"))
        for host in ["api.segment.io", "api.segment.com", "cdn-settings.segment.com", "signals.segment.com",
                     "api.segment.build", "cdn.segment.build", "signals.segment.build"] {
            #expect(!all.observes(host: host), "\(host)")
        }
    }

    @Test func requestsAndJSONResponsesBecomeSignals() throws {
        let server = try LoopbackHTTPServer()
        server.enqueue(.json(#"{"content":{"id":"42","price":19.99}}"#), path: "/api/product/42")
        server.enqueue(.status(200, headers: [("Content-Type", "text/html")], body: "<p>hi</p>"), path: "/page")
        server.enqueue(.json(String(repeating: " ", count: 300) + "{}"), path: "/big")
        let signals = Signals(configuration: quietSignals { $0.allowedNetworkHosts = ["127.0.0.1"]; $0.maximumNetworkBodyBytes = 256 })
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        let configuration = URLSessionConfiguration.ephemeral
        signals.observeNetwork(configuration)
        let session = URLSession(configuration: configuration)

        let (status, body) = fetch(session, server.baseURL + "/api/product/42")
        #expect(status == 200 && body.contains("19.99"))  // the app still gets its answer
        _ = fetch(session, server.baseURL + "/page")
        _ = fetch(session, server.baseURL + "/big")
        _ = fetch(session, server.baseURL + "/order", body: #"{"sku":"A"}"#)
        #expect(signals.flush(timeout: 5))

        let data = recorder.signals.map { $0["data"]?.objectValue ?? [:] }
        #expect(recorder.signals.allSatisfy { $0["type"] == "network" })
        #expect(data.map { $0["action"]?.stringValue ?? "" } == ["request", "response", "request", "response", "request", "response", "request", "response"])
        #expect(data[0]["url"]?.stringValue == server.baseURL + "/api/product/42" && data[0]["method"] == "GET")
        #expect(data[1]["status"] == 200 && data[1]["ok"] == true && data[1]["body"] == ["content": ["id": "42", "price": 19.99]])
        #expect(data[1]["contentType"]?.stringValue?.hasPrefix("application/json") == true)
        #expect(data[1]["requestId"] == data[0]["requestId"])
        #expect(data[3]["body"] == nil, "not JSON")
        #expect(data[5]["body"] == nil, "over maximumNetworkBodyBytes")
        #expect(data[6]["method"] == "POST" && data[6]["body"] == ["sku": "A"])
        signals.shutdown()
    }

    @Test func blockedHostsAreNotObservedButStillWork() throws {
        let server = try LoopbackHTTPServer()
        let signals = Signals(configuration: quietSignals { $0.blockedNetworkHosts = ["127.0.0.1"] })
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        let configuration = URLSessionConfiguration.ephemeral
        signals.observeNetwork(configuration)
        let (status, _) = fetch(URLSession(configuration: configuration), server.baseURL + "/x")
        #expect(status == 200)
        #expect(signals.flush(timeout: 5))
        #expect(recorder.signals.isEmpty)
        signals.shutdown()
    }

    /// The host's own uploads never become signals, even with every host allowed.
    @Test func theHostsOwnUploadsAreNeverObserved() throws {
        let server = try LoopbackHTTPServer()
        let (analytics, _) = makeClient(["Segment.io"]) {
            $0.signals = quietSignals()
            $0.autoAddSegmentDestination = true
            $0.segment.apiHost = server.baseURL + "/v1"
            $0.flushAt = 1
        }
        let signals = try #require(analytics.signals)
        let configuration = URLSessionConfiguration.ephemeral
        signals.observeNetwork(configuration)  // observing is on, for the app's sessions
        let recorder = SignalRecorder()
        signals.subscribe(name: "test", recorder.deliver)
        analytics.track("Uploaded")
        #expect(analytics.flush())
        #expect(server.waitForRequests(1))
        #expect(signals.flush(timeout: 5))
        #expect(!recorder.signals.contains { $0["type"] == "network" })
        analytics.shutdown()
    }
}
