import Foundation
import Testing
import AnalyticsCore
import AnalyticsTestSupport

/// Integrations written in Swift (module AnalyticsIntegration), exercised as the real shared
/// libraries `libWebhooksIntegration.so` and `libMetricsIntegration.so`, loaded by the real loader
/// into this process, which has its own copy of AnalyticsCore (as does each library).
@Suite("SwiftIntegration")
struct SwiftIntegrationTests {
    static let track = #"{"type":"track","event":"Order Completed","messageId":"m-1","anonymousId":"a-1","properties":{"total":12.5,"currency":"EUR"},"timestamp":"2026-11-22T10:00:00.123Z"}"#

    // MARK: Loading

    @Test func bothLibrariesLoadSideBySideAndDeclareSwift() throws {
        let webhooks = try SwiftPluginFiles.load("WebhooksIntegration")
        let metrics = try SwiftPluginFiles.load("MetricsIntegration")
        #expect(webhooks.key == "Webhooks")
        #expect(metrics.key == "Metrics")
        for library in [webhooks, metrics] {
            #expect(library.info.version == "1.0.0")
            #expect(library.info.language == "swift")
            #expect(library.info.toolchain == SwiftToolchain.current)
            #expect(library.info.abiVersion == ABIVersion.host)
        }
        // Each declares the hooks its type conforms to, and nothing else: Webhooks forwards the five
        // event calls and takes new settings; Metrics implements every hook.
        #expect(webhooks.info.hooks.names == ["identify", "track", "screen", "group", "alias", "update", "destroy"])
        #expect(metrics.info.hooks.names == ["identify", "track", "screen", "group", "alias", "reset", "flush", "update", "destroy", "lifecycle"])
        // Loading again gives the same description (the entry returns its one static table).
        #expect(try SwiftPluginFiles.load("WebhooksIntegration").info.key == "Webhooks")
    }

    @Test func anotherToolchainIsRefused() throws {
        let loader = PluginLoader(configuration: .init(hostSwiftToolchain: "Swift 5.9 (clang 15.0.0 elsewhere)"))
        #expect {
            _ = try SwiftPluginFiles.load("MetricsIntegration", loader: loader)
        } throws: { error in
            guard let error = error as? PluginLoadError, case .swiftToolchainMismatch(let library, _) = error.reason else { return false }
            return library == SwiftToolchain.current
        }
    }

    @Test func exportsOnlyTheEntrySymbolAndFindsItsRuntimeThroughRunpath() throws {
        for product in ["WebhooksIntegration", "MetricsIntegration", "PostHogIntegration", "GoogleAnalytics4Integration"] {
            let file = SwiftPluginFiles.path(product)
            let symbols = try run("/usr/bin/nm", ["-D", "--defined-only", file])
            // Global (upper-case type letter) definitions: the entry function and nothing else.
            let globals = symbols.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: " ")
                guard fields.count == 3, fields[1].first!.isUppercase else { return nil }
                return String(fields[2])
            }
            #expect(globals.contains("analytics_host_plugin_v1"), "\(product) must export the entry function")
            let others = globals.filter { $0 != "analytics_host_plugin_v1" }
            #expect(others.count == 0, "\(product) exports \(others.count) more symbols, e.g. \(others.prefix(3)); is Plugins/swift-plugin.exports applied?")
            let dynamic = try run("/usr/bin/readelf", ["-d", file])
            #expect(dynamic.contains("RUNPATH") && dynamic.contains("lib/swift/linux"), "\(product) must find libswiftCore through its RUNPATH")
        }
    }

    // MARK: Webhooks

    /// A host as a client gives one: with its HTTP requests, which Webhooks posts through.
    static var webhookHost: HostServices {
        var services = RecordingHost().services
        services.http = .shared
        return services
    }

    @Test func webhooksNeedTheHostsHTTPRequestsAndSaySoWithout() throws {
        #expect {
            _ = try SwiftPluginFiles.load("WebhooksIntegration").makeInstance(
                settings: settingsObject(#"{"globalHook": "https://example.com/in"}"#), services: RecordingHost().services)
        } throws: { error in
            guard let error = error as? PluginLoadError, case .createFailed(let key, let message) = error.reason else { return false }
            return key == "Webhooks" && message.contains("AH_EXT_HTTP_REQUESTS")
        }
    }

    @Test func webhooksPostsEveryCallWithHeadersAndSignature() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let settings = settingsObject("""
            {"hooks": [{"hook": "\(server.baseURL)/a", "headers": [{"key": "X-Token", "value": "t0k"}, {"key": "", "value": ""}]},
                       {"hook": "\(server.baseURL)/b"}, {"hook": ""}],
             "globalHook": "\(server.baseURL)/a", "sharedSecret": "s3cret"}
            """)
        let instance = try SwiftPluginFiles.load("WebhooksIntegration").makeInstance(settings: settings, services: Self.webhookHost)

        let events = [
            wireEvent(Self.track),
            wireEvent(#"{"type":"identify","userId":"u-1","traits":{"email":"a@example.com"}}"#),
            wireEvent(#"{"type":"screen","name":"Home","anonymousId":"a-1"}"#),
            wireEvent(#"{"type":"page","name":"Pricing","anonymousId":"a-1"}"#),
            wireEvent(#"{"type":"group","groupId":"g-1","userId":"u-1"}"#),
            wireEvent(#"{"type":"alias","userId":"u-1","previousId":"a-1"}"#),
        ]
        for event in events { #expect(instance.deliver(event) == .ok) }
        // globalHook equal to hooks[0] is not posted twice: two URLs per event.
        #expect(server.waitForRequests(events.count * 2, timeout: 10))
        let requests = server.requests
        #expect(requests.count == events.count * 2)

        for (i, event) in events.enumerated() {
            let pair = requests.filter { (try? JSON(parsing: $0.body).objectValue) == event.payload }
            #expect(pair.map(\.path).sorted() == ["/a", "/b"], "event \(i) reaches both URLs with its payload unchanged")
            for request in pair {
                #expect(request.method == "POST")
                #expect(request.header("Content-Type") == "application/json")
                #expect(request.header("X-Token") == (request.path == "/a" ? "t0k" : nil))
                #expect(request.header("X-Signature") == (try opensslHMACSHA1(key: "s3cret", body: request.body)))
            }
        }
    }

    @Test func webhooksMapsServerAnswersToRetryableOrPermanent() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let instance = try SwiftPluginFiles.load("WebhooksIntegration").makeInstance(
            settings: settingsObject(#"{"hooks": [{"hook": "\#(server.baseURL)/hook"}], "timeoutSeconds": 2}"#),
            services: Self.webhookHost)
        let event = wireEvent(Self.track)

        server.enqueue(.status(500, body: "boom"))
        guard case .retryable(let message500) = instance.deliver(event) else { Issue.record("500 must be retryable"); return }
        #expect(message500.contains("500") && message500.contains("/hook"), "\(message500)")

        server.enqueue(.status(404))
        guard case .permanent(let message404) = instance.deliver(event) else { Issue.record("404 must be permanent"); return }
        #expect(message404.contains("404"))

        server.enqueue(.status(429))
        #expect(instance.deliver(event) == .retryable("POST \(server.baseURL)/hook answered 429"))
        server.enqueue(.status(501))
        #expect(instance.deliver(event) == .permanent("POST \(server.baseURL)/hook answered 501"))

        // No answer (connection closed, or a hung server): retryable, within the configured timeout.
        for script in [ScriptedResponse.close, .hang] {
            server.enqueue(script)
            let started = Date()
            guard case .retryable = instance.deliver(event) else { Issue.record("\(script) must be retryable"); return }
            #expect(Date().timeIntervalSince(started) < 6, "\(script): the hook must give up after timeoutSeconds (2 s), not the 60 s default")
        }
        #expect(instance.deliver(event) == .ok)
        #expect(server.requestCount == 7)
    }

    @Test func webhooksNetworkFailureIsRetryable() throws {
        let closed = try LoopbackHTTPServer()
        let url = closed.baseURL
        closed.stop()
        let instance = try SwiftPluginFiles.load("WebhooksIntegration").makeInstance(
            settings: settingsObject(#"{"globalHook": "\#(url)/gone", "timeoutSeconds": 2}"#), services: Self.webhookHost)
        guard case .retryable(let message) = instance.deliver(wireEvent(Self.track)) else {
            Issue.record("connection refused must be retryable")
            return
        }
        #expect(message.contains("/gone"))
    }

    @Test func webhooksRetryOnlyRepostsToURLsThatFailed() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let instance = try SwiftPluginFiles.load("WebhooksIntegration").makeInstance(
            settings: settingsObject(#"{"hooks": [{"hook": "\#(server.baseURL)/ok"}, {"hook": "\#(server.baseURL)/flaky"}]}"#),
            services: Self.webhookHost)
        server.enqueue(.status(503), path: "/flaky")
        let event = wireEvent(Self.track)
        guard case .retryable(let message) = instance.deliver(event) else { Issue.record("503 must be retryable"); return }
        #expect(message.contains("/flaky") && !message.contains("/ok"))
        #expect(instance.deliver(event) == .ok)  // the host's retry of the same message
        #expect(server.requests.map(\.path) == ["/ok", "/flaky", "/flaky"])
    }

    @Test func webhooksRefusesBadSettingsAtCreate() throws {
        let library = try SwiftPluginFiles.load("WebhooksIntegration")
        let cases: [(String, String)] = [
            ("{}", "no URL"),
            (#"{"hooks": [{"hook": "ftp://example.com/x"}]}"#, "hooks[0].hook"),
            (#"{"hooks": [{"hook": "https://example.com", "headers": [{"key": "Bad Name", "value": "v"}]}]}"#, "hooks[0].headers[0].key"),
            (#"{"hooks": [{"hook": "https://example.com", "headers": [{"key": "X", "value": "a\r\nb"}]}]}"#, "line break"),
            (#"{"globalHook": 7}"#, "globalHook"),
        ]
        for (settings, expected) in cases {
            #expect {
                _ = try library.makeInstance(settings: settingsObject(settings), services: Self.webhookHost)
            } throws: { error in
                guard let error = error as? PluginLoadError, case .createFailed(let key, let message) = error.reason else { return false }
                return key == "Webhooks" && message.contains(expected)
            }
        }
    }

    // MARK: Metrics (host services, other errors)

    @Test func metricsCountsWritesItsSummaryAndUsesHostServices() throws {
        let directory = makeTempDirectory("metrics")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let longUserId = String(repeating: "u", count: 300)  // longer than the first id buffer
        let host = RecordingHost(userId: longUserId, anonymousId: "anon-7")
        let instance = try SwiftPluginFiles.load("MetricsIntegration").makeInstance(
            settings: settingsObject(#"{"path": "\#(directory)/summary.json", "summaryEvent": "Metrics Summary"}"#),
            services: host.services)
        #expect(instance.update(settings: settingsObject(#"{"path": "\#(directory)/m.json", "summaryEvent": "Metrics Summary"}"#), kind: .initial) == .ok)
        #expect(instance.lifecycle(.started) == .ok)

        for _ in 0..<3 { #expect(instance.deliver(wireEvent(Self.track)) == .ok) }
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Signed Up","userId":"u"}"#)) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"screen","name":"Home","userId":"u"}"#)) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"page","name":"Home","userId":"u"}"#)) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"identify","userId":"u"}"#)) == .ok)
        #expect(instance.deliver(wireEvent(#"{"type":"track","event":"Metrics Summary","userId":"u"}"#)) == .ok)  // not counted
        #expect(instance.reset() == .ok)
        #expect(instance.flush() == .ok)

        let summary = try JSON(parsing: Data(contentsOf: URL(fileURLWithPath: "\(directory)/m.json")))
        #expect(summary["integration"] == "Metrics")
        #expect(summary["total"] == 7)
        #expect(summary["types"] == ["identify": 1, "page": 1, "screen": 1, "track": 4])
        #expect(summary["events"] == ["Order Completed": 3, "Signed Up": 1])
        #expect(summary["screens"] == ["Home": 2])
        #expect(summary["resets"] == 1)
        #expect(summary["userId"] == .string(longUserId))
        #expect(summary["anonymousId"] == "anon-7")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/summary.json"))  // the update moved it

        let sent = host.sentObjects
        #expect(sent.count == 1)
        #expect(sent.first?["event"] == "Metrics Summary")
        #expect(sent.first?["anonymousId"] == "anon-7")
        #expect(sent.first?["properties"]?["total"] == 7)
        #expect(host.logLines.contains { $0.hasPrefix("Metrics: wrote 7 counted events") })
        #expect(instance.lifecycle(.stopping) == .ok)
    }

    @Test func errorsOtherThanIntegrationErrorArePermanent() throws {
        let library = try SwiftPluginFiles.load("MetricsIntegration")
        let instance = try library.makeInstance(
            settings: settingsObject(#"{"path": "/nonexistent-\#(UUID().uuidString)/m.json"}"#), services: RecordingHost().services)
        #expect(instance.deliver(wireEvent(Self.track)) == .ok)
        // Foundation's own error from the failed write.
        guard case .permanent(let message) = instance.flush() else { Issue.record("a failed write must be permanent"); return }
        #expect(!message.isEmpty)
        // IntegrationError.permanent from update, with its text.
        #expect(instance.update(settings: settingsObject(#"{"path": "/tmp/x", "summaryEvent": 3}"#), kind: .refresh)
                == .permanent("Metrics setting \"summaryEvent\" must be a non-empty string, not 3"))
        #expect {
            _ = try library.makeInstance(settings: [:], services: RecordingHost().services)
        } throws: { error in
            (error as? PluginLoadError)?.reason == .createFailed(key: "Metrics", message: "Metrics needs a \"path\" setting (the summary file)")
        }
    }

    /// What `make plugins` does: the libraries copied elsewhere still find their runtime (the
    /// RUNPATH names the toolchain), and a directory scan takes them. The copy of Webhooks is a
    /// second image with the same module names as the original, loaded beside it: each binds to
    /// its own copies (only the entry symbol is exported), so both work.
    @Test func copiedLibrariesLoadFromAnotherDirectoryBesideTheOriginals() throws {
        let directory = makeTempDirectory("plugins")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for product in ["WebhooksIntegration", "MetricsIntegration"] {
            try FileManager.default.copyItem(atPath: SwiftPluginFiles.path(product), toPath: "\(directory)/lib\(product).so")
        }
        let scan = PluginLoader().scan(directory: directory)
        #expect(scan.problems.isEmpty, "\(scan.problems)")
        #expect(scan.libraries.map(\.key).sorted() == ["Metrics", "Webhooks"])

        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let copy = try #require(scan.libraries.first { $0.key == "Webhooks" })
        let original = try SwiftPluginFiles.load("WebhooksIntegration")
        #expect(copy.file != original.file)
        let settings = settingsObject(#"{"globalHook": "\#(server.baseURL)/twice"}"#)
        let instances = [try copy.makeInstance(settings: settings, services: Self.webhookHost),
                         try original.makeInstance(settings: settings, services: Self.webhookHost)]
        for instance in instances {
            #expect(instance.deliver(wireEvent(Self.track)) == .ok)
            server.enqueue(.status(400))
            #expect(instance.deliver(wireEvent(Self.track)) == .permanent("POST \(server.baseURL)/twice answered 400"))
        }
        #expect(server.requestCount == 4)
    }

    // MARK: Inside a real client

    /// Both libraries as destinations of a real client: created from the settings, fed by their
    /// workers, a 500 retried by the host until the webhook accepts, Metrics' summary event sent
    /// back through the pipeline and delivered to Webhooks too.
    @Test func swiftLibrariesServeARealClient() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = makeTempDirectory("swift-client")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        server.enqueue(.status(500))  // the first delivery fails retryably

        let errors = ErrorLog()
        var configuration = Configuration(writeKey: "wk", storageDirectory: directory + "/state")
        configuration.settingsLocation = .defaultsOnly
        configuration.trackApplicationLifecycleEvents = false
        configuration.defaultSettings = Settings(["integrations": [
            "Webhooks": .object(settingsObject(#"{"hooks": [{"hook": "\#(server.baseURL)/in", "headers": [{"key": "X-App", "value": "demo"}]}]}"#)),
            "Metrics": .object(settingsObject(#"{"path": "\#(directory)/metrics.json", "summaryEvent": "Metrics Summary"}"#)),
        ]])
        configuration.integrationFactories = [
            NativeIntegrationFactory(library: try SwiftPluginFiles.load("WebhooksIntegration"),
                                     retryPolicy: NativeRetryPolicy(maxAttempts: 4, initialDelay: 0.001, maxDelay: 0.004)),
            NativeIntegrationFactory(library: try SwiftPluginFiles.load("MetricsIntegration")),
        ]
        configuration.errorHandler = errors.handler
        let analytics = Analytics(configuration: configuration)
        #expect(analytics.find(key: "Webhooks") is NativeDestination)
        #expect(analytics.find(key: "Metrics") is NativeDestination)

        analytics.track("Order Completed", properties: ["total": 3])
        analytics.screen("Home")
        // Metrics sends its summary on flush; it reaches Webhooks later: poll with a deadline.
        let deadline = Date().addingTimeInterval(10)
        var names: [String] = []
        while Date() < deadline {
            #expect(analytics.flush())
            names = server.requests.filter { $0.path == "/in" }.compactMap {
                (try? JSON(parsing: $0.body)).flatMap { $0["event"]?.stringValue ?? $0["name"]?.stringValue }
            }
            if names.contains("Metrics Summary") { break }
        }
        // The 500 answered "Order Completed" once; the retry delivered it.
        #expect(names.first == "Order Completed" && names.dropFirst().first == "Order Completed")
        #expect(names.contains("Home") && names.contains("Metrics Summary"))
        #expect(server.requests.allSatisfy { $0.header("X-App") == "demo" })
        let summary = try JSON(parsing: Data(contentsOf: URL(fileURLWithPath: "\(directory)/metrics.json")))
        #expect(summary["events"]?["Order Completed"] == 1)
        #expect(summary["screens"] == ["Home": 1])
        #expect(summary["anonymousId"] == .string(analytics.anonymousId))
        #expect(analytics.shutdown())
        #expect(errors.messages.isEmpty, "\(errors.messages)")
    }

    /// Webhooks in its own runner, granted nothing (no network): its posts go through the host's
    /// HTTP requests, answered while its hook waits, a 500 retried by the host as in-process.
    @Test func webhooksInProcessModePostsThroughTheHostWithoutANetworkGrant() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = makeTempDirectory("swift-webhooks-process")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        server.enqueue(.status(500))
        let runner = try #require(PluginRunnerLocator.find(), "analytics-plugin-runner is built next to the tests")
        let errors = ErrorLog()
        var configuration = Configuration(writeKey: "wk", storageDirectory: directory + "/state")
        configuration.settingsLocation = .defaultsOnly
        configuration.trackApplicationLifecycleEvents = false
        configuration.autoAddSegmentDestination = false
        configuration.defaultSettings = Settings(["integrations": [
            "Webhooks": .object(settingsObject(#"{"globalHook": "\#(server.baseURL)/in", "isolation": "process"}"#)),
        ]])
        configuration.integrationFactories = [ProcessIntegrationFactory(info: try SwiftPluginFiles.load("WebhooksIntegration").info, runner: runner)]
        configuration.errorHandler = errors.handler
        let analytics = Analytics(configuration: configuration)
        for name in ["One", "Two", "Three"] { analytics.track(name) }
        #expect(analytics.flush())
        #expect(server.waitForRequests(4, timeout: 10))
        let names = server.requests.compactMap { (try? JSON(parsing: $0.body))?["event"]?.stringValue }
        #expect(names == ["One", "One", "Two", "Three"], "the 500 retried, then in order: \(names)")
        #expect(analytics.timeline.stats(forKey: "Webhooks")?.delivered == 3)
        #expect(analytics.shutdown())
        #expect(errors.messages.isEmpty, "\(errors.messages)")
    }

    // MARK: Cost

    /// What one event costs through a Swift library: the host's encoded event crosses as text,
    /// AnalyticsIntegration parses it into an Event and calls the typed hook. Prints the number
    /// (`swift build -c release && swift test -c release --filter SwiftIntegration` for real
    /// ones); checks only a loose bound.
    @Test func oneEventThroughASwiftLibrary() throws {
        let directory = makeTempDirectory("cost")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let instance = try SwiftPluginFiles.load("MetricsIntegration").makeInstance(
            settings: settingsObject(#"{"path": "\#(directory)/m.json"}"#), services: RecordingHost().services)
        let event = wireEvent(Self.track)
        let count = 20_000
        var failures = 0
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<count where instance.deliver(event) != .ok { failures += 1 }
        }
        #expect(failures == 0)
        let micros = (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(count)
        print("swift integration cost: \(String(format: "%.2f", micros)) µs per track event (\(Self.track.utf8.count)-byte JSON parsed, typed hook called)")
        #expect(micros < 1000)
        #expect(instance.flush() == .ok)
        let summary = try JSON(parsing: Data(contentsOf: URL(fileURLWithPath: "\(directory)/m.json")))
        #expect(summary["total"] == .number(Double(count)))
    }

    // MARK: Coexistence

    /// Host + two Swift libraries, three copies of AnalyticsCore in one process; several instances
    /// called concurrently (one thread each, as destination workers do).
    @Test func twoSwiftLibrariesAndTheHostRunConcurrently() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let directory = makeTempDirectory("coexist")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let webhooks = try SwiftPluginFiles.load("WebhooksIntegration")
        let metrics = try SwiftPluginFiles.load("MetricsIntegration")
        let host = RecordingHost()
        let instances = [
            try webhooks.makeInstance(settings: settingsObject(#"{"globalHook": "\#(server.baseURL)/w"}"#), services: Self.webhookHost),
            try metrics.makeInstance(settings: settingsObject(#"{"path": "\#(directory)/1.json"}"#), services: host.services),
            try metrics.makeInstance(settings: settingsObject(#"{"path": "\#(directory)/2.json"}"#), services: host.services),
        ]
        let perInstance = 200
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: instances.count) { i in
            for n in 0..<perInstance {
                var event = wireEvent(Self.track)
                event.messageId = "m-\(i)-\(n)"
                if instances[i].deliver(event) != .ok { failures.withLock { $0 += 1 } }
                // The host's own AnalyticsCore works alongside: parse what we just sent.
                if (try? JSON(parsing: event.serializedBytes))?["messageId"] != .string("m-\(i)-\(n)") { failures.withLock { $0 += 1 } }
            }
            if instances[i].flush() != .ok { failures.withLock { $0 += 1 } }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(server.requestCount == perInstance)
        for file in ["1.json", "2.json"] {
            let summary = try JSON(parsing: Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)")))
            #expect(summary["events"] == ["Order Completed": .number(Double(perInstance))])
        }
        for instance in instances { instance.destroy() }
        #expect(instances.allSatisfy { !$0.isAlive })
    }
}

/// Output of a short child process.
private func run(_ tool: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
