import AnalyticsTestSupport
import Foundation
import AnalyticsCore

/// The Swift example integrations as the real shared libraries `make plugins` links from the
/// objects SwiftPM compiled next to the test binary (`make test` runs it first).
enum SwiftPluginFiles {
    struct Missing: Error, CustomStringConvertible {
        var file: String
        var description: String { "\(file) does not exist: run `make plugins` (or `make test`) before `swift test`" }
    }

    /// A library older than its objects was not relinked (e.g. after `swift build --target …`).
    struct Stale: Error, CustomStringConvertible {
        var file: String
        var newer: String
        var description: String { "\(file) is older than \(newer): run `make plugins` (or `make test`) before `swift test`" }
    }

    /// The directory of the running test binary, e.g. `.build/x86_64-unknown-linux-gnu/debug`.
    static let buildDirectory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }()

    /// The library `make plugins` linked from SwiftPM's objects with Plugins/swift-plugin.exports.
    static func path(_ product: String) -> String {
        let fixture = "\(FixtureBuilder.root)/build/fixtures/lib\(product).so"
        return product.hasSuffix("FixtureIntegration") ? fixture : "\(FixtureBuilder.root)/build/plugins/lib\(product).so"
    }

    private static func modificationDate(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    static func load(_ product: String, loader: PluginLoader = PluginLoader()) throws -> NativeLibrary {
        let file = path(product)
        guard let built = modificationDate(file) else { throw Missing(file: file) }
        for module in [product, "AnalyticsIntegration", "AnalyticsCore"] {
            let objects = "\(buildDirectory)/\(module).build"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: objects)) ?? [] where name.hasSuffix(".o") {
                if let compiled = modificationDate("\(objects)/\(name)"), compiled > built {
                    throw Stale(file: file, newer: "\(objects)/\(name)")
                }
            }
        }
        return try loader.load(file: file)
    }
}

extension RecordingHost {
    /// The events a library sent back into the pipeline, parsed.
    var sentObjects: [JSONObject] {
        sent.withLock { $0 }.compactMap { try? JSON(parsing: $0).objectValue }
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
