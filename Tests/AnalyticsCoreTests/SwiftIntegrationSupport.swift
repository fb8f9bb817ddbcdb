import Foundation
import AnalyticsCore

/// The Swift example integrations as the real shared libraries SwiftPM built next to the test
/// binary (`swift build` builds them; `make test` runs it first).
enum SwiftPluginFiles {
    struct Missing: Error, CustomStringConvertible {
        var file: String
        var description: String { "\(file) does not exist: run `swift build` (or `make test`) before `swift test`" }
    }

    /// The directory of the running test binary, e.g. `.build/x86_64-unknown-linux-gnu/debug`.
    static let buildDirectory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }()

    static func path(_ product: String) -> String { "\(buildDirectory)/lib\(product).so" }

    static func load(_ product: String, loader: PluginLoader = PluginLoader()) throws -> NativeLibrary {
        let file = path(product)
        guard FileManager.default.fileExists(atPath: file) else { throw Missing(file: file) }
        return try loader.load(file: file)
    }
}

/// Host services that record what an integration asked of the host.
final class RecordingHost: Sendable {
    private let state = Locked<(logs: [(NativeLogLevel, String)], sent: [[UInt8]])>(([], []))
    let userId: String?
    let anonymousId: String

    init(userId: String? = "user-42", anonymousId: String = "anon-1") {
        self.userId = userId
        self.anonymousId = anonymousId
    }

    var logs: [String] { state.withLock { $0.logs.map(\.1) } }
    var sentEvents: [JSONObject] {
        state.withLock { $0.sent }.compactMap { try? JSON(parsing: $0).objectValue }
    }

    var services: HostServices {
        HostServices(
            log: { [self] level, text in state.withLock { $0.logs.append((level, text)) } },
            sendEvent: { [self] bytes in
                guard (try? JSON(parsing: bytes).objectValue) != nil else { return .permanent("not an object") }
                state.withLock { $0.sent.append(bytes) }
                return .ok
            },
            userId: { [userId] in userId },
            anonymousId: { [anonymousId] in anonymousId })
    }
}

/// An event from JSON text (tests write events the way they appear on the wire).
func wireEvent(_ text: String) -> Event {
    try! Event(payload: JSON(parsing: text).objectValue!)
}

/// Settings object from JSON text.
func settingsObject(_ text: String) -> JSONObject {
    try! JSON(parsing: text).objectValue!
}

/// HMAC-SHA1 hex of `body` computed by the system's `openssl` in a child process: an independent
/// check of the X-Signature the Webhooks library computes.
func opensslHMACSHA1(key: String, body: [UInt8]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["dgst", "-sha1", "-hmac", key]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data(body))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    // "HMAC-SHA1(stdin)= 0123…" (older versions print "(stdin)= 0123…")
    return String(decoding: data, as: UTF8.self).split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
}
