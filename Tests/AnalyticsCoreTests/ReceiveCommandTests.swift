import AnalyticsCore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// `analytics-host receive` as a user runs it: a real child process on 127.0.0.1, real HTTP
/// requests (and a real `run` uploading to it), the NDJSON file it writes, SIGTERM to stop it.
@Suite(.serialized) struct ReceiveCommandTests {
    /// A running receiver; `stop()` sends SIGTERM and returns its exit status and standard error.
    final class Receiver {
        let process = Process()
        let errors = Pipe()
        let port: Int
        var stderr = ""

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: try HostBinary.path())
            process.arguments = ["receive", "--port", "0"] + arguments
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // The start lines name the port it picked.
            var found: Int?
            while found == nil {
                let data = errors.fileHandleForReading.availableData
                guard !data.isEmpty else { throw FixtureBuilder.BuildError(description: "receive ended before listening: \(stderr)") }
                stderr += String(decoding: data, as: UTF8.self)
                if let match = stderr.firstMatch(of: /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/), stderr.contains("Ctrl-C stops\n") {
                    found = Int(match.output.1)
                }
            }
            port = found!
        }

        var url: String { "http://127.0.0.1:\(port)/v1" }

        func stop() -> (status: Int32, stderr: String) {
            process.terminate()
            let rest = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, stderr + String(decoding: rest, as: UTF8.self))
        }
    }

    /// One request, answered: status and body.
    static func post(_ url: String, _ body: [UInt8], method: String = "POST", headers: [String: String] = [:]) throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        if method == "POST" { request.httpBody = Data(body) }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let answer = Locked<(Int, String)?>(nil)
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, _ in
            answer.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode ?? -1, String(decoding: data ?? Data(), as: UTF8.self)) }
            done.signal()
        }.resume()
        guard done.wait(timeout: .now() + 10) == .success, let result = answer.withLock({ $0 }) else {
            throw FixtureBuilder.BuildError(description: "no answer from \(url)")
        }
        return result
    }

    static func basic(_ key: String) -> [String: String] {
        ["Authorization": "Basic " + Data("\(key):".utf8).base64EncodedString()]
    }

    /// What `make run` does: a run uploads to the receiver, which writes each event once, in order.
    @Test func aRunUploadsToTheReceiverAndEveryEventIsWrittenOnce() throws {
        let dir = makeTempDirectory("receive-run")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let receiver = try Receiver(["--out", dir + "/received.ndjson", "--write-key", "k-1"])
        try #"{"integrations":{"Segment.io":{"apiKey":"k-1","apiHost":"127.0.0.1:9/v1"}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let ids = (1...5).map { "m-\($0)" }
        let input = ids.map { #"{"type":"track","event":"Received","userId":"u","messageId":"\#($0)","properties":{"price":1.50}}"# }.joined(separator: "\n") + "\n"
        let run = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir, "--storage", dir + "/storage",
                                      "--api-host", receiver.url, "--drain-timeout", "20", "--quiet"], stdin: input, in: dir)
        let (status, stderr) = receiver.stop()
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("5 uploaded to \(receiver.url)"), "\(run.stdout)")
        #expect(status == 0)
        #expect(stderr.contains("stopped; 5 events received in 1 request, written to \(dir)/received.ndjson"), "\(stderr)")
        let lines = try String(contentsOfFile: dir + "/received.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(lines.compactMap { try? JSON(parsing: String($0))["messageId"]?.stringValue } == ids)
        #expect(lines.allSatisfy { $0.contains(#""price":1.50"#) }, "numbers pass through as sent")
    }

    /// The endpoints, gzip, Basic auth (or writeKey in the body), the refusals, and the bytes of
    /// each event written as sent (only line breaks between tokens become spaces), with the
    /// batch's sentAt added to events that have none.
    @Test func endpointsGzipAuthRefusalsAndExactBytes() throws {
        let dir = makeTempDirectory("receive-endpoints")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/out.ndjson"
        let receiver = try Receiver(["--out", out, "--write-key", "secret"])
        let auth = Self.basic("secret")

        let batch = "{\"sentAt\": \"2026-11-23T00:00:00Z\",\n \"batch\": [\n  {\"type\": \"track\", \"event\": \"A\", \"n\": 1.50, \"e\": 1e2},\n  {\"type\":\"identify\",\"traits\":{\"name\":\"\\u00e9 ]\"}}\n ]}"
        #expect(try Self.post(receiver.url + "/batch", Array(batch.utf8), headers: auth) == (200, #"{"success":true}"#))
        let single = #"{"type":"track","event":"Gzipped","userId":"u"}"#
        var gzipHeaders = auth
        gzipHeaders["Content-Encoding"] = "gzip"
        #expect(try Self.post(receiver.url + "/t", try Gzip.compress(Array(single.utf8)), headers: gzipHeaders).status == 200)
        let inBody = #"{"type":"identify","userId":"u","writeKey":"secret"}"#
        #expect(try Self.post(receiver.url + "/identify", Array(inBody.utf8)).status == 200)
        #expect(try Self.post(receiver.url + "/b?x=1", Array(#"{"batch":[]}"#.utf8), headers: auth).status == 200)

        // Refused: nothing written.
        #expect(try Self.post(receiver.url + "/b", Array(#"{"batch":[{"type":"track"}]}"#.utf8), headers: Self.basic("wrong")).status == 401)
        #expect(try Self.post(receiver.url + "/b", Array(#"{"batch":[{"type":"track"}]}"#.utf8)).status == 401)
        #expect(try Self.post(receiver.url + "/nope", Array("{}".utf8), headers: auth).status == 404)
        #expect(try Self.post(receiver.url + "/b", [], method: "GET", headers: auth).status == 405)
        let notJSON = try Self.post(receiver.url + "/b", Array("{not json".utf8), headers: auth)
        #expect(notJSON.status == 400 && notJSON.body.contains("not JSON"))
        #expect(try Self.post(receiver.url + "/b", Array(#"{"batch":{}}"#.utf8), headers: auth).status == 400)
        #expect(try Self.post(receiver.url + "/b", Array(#"{"batch":[1]}"#.utf8), headers: auth).status == 400)
        #expect(try Self.post(receiver.url + "/t", Array("not gzip".utf8), headers: gzipHeaders).status == 400)

        let (status, stderr) = receiver.stop()
        #expect(status == 0)
        #expect(stderr.contains("stopped; 4 events received in 4 requests, 8 refused"), "\(stderr)")
        #expect(stderr.contains("refused /v1/b: 401 wrong write key 'wrong'"))
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text == """
            {"type": "track", "event": "A", "n": 1.50, "e": 1e2,"sentAt":"2026-11-23T00:00:00Z"}
            {"type":"identify","traits":{"name":"\\u00e9 ]"},"sentAt":"2026-11-23T00:00:00Z"}
            \(single)
            \(inBody)

            """)
    }

    @Test func aPortInUseIsAUsageError() throws {
        let first = try Receiver(["--quiet"])
        defer { _ = first.stop() }
        let second = try HostBinary.run(["receive", "--port", "\(first.port)"], in: FixtureBuilder.root)
        #expect(second.status == 2)
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(first.port): Address already in use"), "\(second.stderr)")
        let badPort = try HostBinary.run(["receive", "--port", "70000"], in: FixtureBuilder.root)
        #expect(badPort.status == 2 && badPort.stderr.contains("--port needs a port number"))
    }
}
