import AnalyticsTestSupport
import Foundation
import Testing
@testable import AnalyticsCore

/// Settings from a file, from a real HTTP server on 127.0.0.1, from the disk cache, and the fallbacks.
@Suite struct SettingsSourceTests {
    static let key = "wk_abc"
    static let cdnDocument = #"""
    {"integrations":{"Segment.io":{"apiKey":"wk_abc","apiHost":"api.segment.io/v1","unbundledIntegrations":[]},
      "Amplitude":{"apiKey":"amp","trackAllPages":false}},
     "plan":{"track":{"__default":{"enabled":true}}},
     "middlewareSettings":{"routingRules":[]},
     "edgeFunction":{},
     "futureFeature":{"z":1,"a":[1,2,{"k":null}]}}
    """#

    func source(_ server: LoopbackHTTPServer?, dir: TemporaryDirectory?, defaults: JSONObject? = nil, file: String? = nil) -> SettingsSource {
        SettingsSource(configuration: SettingsSourceConfiguration(
            writeKey: Self.key, cdnHost: server?.baseURL ?? "http://127.0.0.1:1", localFile: file,
            storageDirectory: dir?.path, defaultSettings: defaults, timeout: 2))
    }

    @Test func fromLocalFileKeepsUnknownKeysAndOrder() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("settings.json")
        try Self.cdnDocument.write(toFile: path, atomically: true, encoding: .utf8)
        let result = source(nil, dir: nil, file: path).load()
        #expect(result.origin == .file(path))
        #expect(result.problems.isEmpty)
        #expect(result.settings.keys == ["integrations", "plan", "middlewareSettings", "edgeFunction", "futureFeature"])
        #expect(JSON.object(result.settings)["futureFeature"] == (try JSON(parsing: #"{"z":1,"a":[1,2,{"k":null}]}"#)))
        #expect(JSON.object(result.settings).serialized() == (try JSON(parsing: Self.cdnDocument)).serialized())
    }

    @Test func fromServerAndCachedOnDisk() throws {
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        server.defaultResponse = .json(Self.cdnDocument)
        let src = source(server, dir: dir)
        let result = src.load()
        #expect(result.origin == .network("\(server.baseURL)/v1/projects/\(Self.key)/settings"))
        #expect(result.problems.isEmpty)
        #expect(JSON.object(result.settings)[path: "integrations.Amplitude.apiKey"] == "amp")
        let request = try #require(server.requests.first)
        #expect(request.method == "GET")
        #expect(request.path == "/v1/projects/\(Self.key)/settings")
        let cachePath = try #require(src.cachePath)
        #expect(cachePath.hasPrefix(dir.path))
        let cached = try JSON(parsing: [UInt8](try #require(FileManager.default.contents(atPath: cachePath))))
        #expect(cached == .object(result.settings))
    }

    @Test func fromCacheWhenTheServerIsDown() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try LoopbackHTTPServer()
        server.defaultResponse = .json(Self.cdnDocument)
        let fetched = source(server, dir: dir).load()
        #expect(fetched.origin == .network("\(server.baseURL)/v1/projects/\(Self.key)/settings"))
        server.stop()

        let src = source(server, dir: dir, defaults: ["integrations": ["Other": [:]]])
        let result = src.load()
        #expect(result.origin == .cache(src.cachePath!))
        #expect(result.settings == fetched.settings)
        #expect(result.problems.count == 1)
        #expect(result.problems[0].source.hasPrefix("network "))
        #expect(result.problems[0].description.contains("fetch failed"))
    }

    @Test func serverErrorFallsBackToCache() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        server.enqueue(.json(Self.cdnDocument))
        server.enqueue(.status(503, body: "down"))
        let src = source(server, dir: dir)
        #expect(src.load().problems.isEmpty)
        let result = src.load()
        #expect(result.origin == .cache(src.cachePath!))
        #expect(result.problems.map(\.message) == ["HTTP 503: down"])
    }

    @Test func defaultsThenBuiltInWhenNothingElse() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let defaults: JSONObject = ["integrations": ["Segment.io": ["apiKey": "wk_abc"], "Mixpanel": ["token": "t"]]]
        let withDefaults = source(nil, dir: dir, defaults: defaults).load()
        #expect(withDefaults.origin == .defaults)
        #expect(withDefaults.settings == defaults)
        #expect(withDefaults.problems.count == 1)  // the failed fetch

        let bare = source(nil, dir: dir).load()
        #expect(bare.origin == .builtIn)
        #expect(JSON.object(bare.settings) == ["integrations": ["Segment.io": ["apiKey": "wk_abc", "apiHost": "api.segment.io/v1"]]])

        let badDefaults = source(nil, dir: dir, defaults: ["integrations": ["X": 3]]).load()
        #expect(badDefaults.origin == .builtIn)
        #expect(badDefaults.problems.contains { $0.source == "defaults" && $0.path == "integrations.X" })
    }

    @Test func malformedSettingsKeepThePreviousOnesAndNameThePath() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let server = try LoopbackHTTPServer()
        defer { server.stop() }
        let src = source(server, dir: dir)
        server.enqueue(.json(Self.cdnDocument))
        let first = src.load()
        #expect(first.origin == .network("\(server.baseURL)/v1/projects/\(Self.key)/settings"))

        server.enqueue(.json(#"{"integrations":{"Segment.io":{"apiKey":"wk_abc"},"Amplitude":true},"plan":[]}"#))
        let refresh = src.load(previous: first.settings)
        #expect(refresh.origin == .previous)
        #expect(refresh.settings == first.settings)
        let descriptions = refresh.problems.map(\.description)
        #expect(descriptions.contains { $0.hasSuffix("integrations.Amplitude: expected an object, found a boolean") })
        #expect(descriptions.contains { $0.hasSuffix("plan: expected an object, found an array") })
        // The bad document did not replace the cache.
        let cached = try JSON(parsing: [UInt8](FileManager.default.contents(atPath: src.cachePath!)!))
        #expect(cached == .object(first.settings))

        server.enqueue(.json(#"{"integrations": {"#))
        let truncated = src.load(previous: first.settings)
        #expect(truncated.origin == .previous)
        #expect(truncated.problems.first?.message.contains("invalid JSON at line 1, column") == true)
    }

    @Test func malformedFileFallsBackToCacheThenDefaults() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.file("local.json")
        try #"{"integrations":{"Segment.io":{"apiHost":5}},"middlewareSettings":{"routingRules":[1]}}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        try "not json".write(toFile: dir.file("settings-wk_abc.json"), atomically: true, encoding: .utf8)
        let result = source(nil, dir: dir, defaults: ["integrations": [:]], file: path).load()
        #expect(result.origin == .defaults)
        let text = result.problems.map(\.description)
        #expect(text.contains { $0.contains("file \(path): integrations.Segment.io.apiHost: expected a string") })
        #expect(text.contains { $0.contains("middlewareSettings.routingRules.0: expected an object") })
        #expect(text.contains { $0.contains("cache ") && $0.contains("invalid JSON") })
    }

    @Test func validatorPassesUnknownShapes() throws {
        let doc = try JSON(parsing: #"{"integrations":{},"metrics":{"sampleRate":0.1},"remotePlugins":[1,"x"],"consentSettings":null}"#)
        #expect(SettingsValidator.problems(in: doc, source: "t").isEmpty)
        #expect(SettingsValidator.problems(in: "text", source: "t").map(\.description) == ["settings from t: expected a JSON object at the top level, found a string"])
        #expect(SettingsValidator.problems(in: ["plan": [:]], source: "t").map(\.path) == ["integrations"])
    }
}
