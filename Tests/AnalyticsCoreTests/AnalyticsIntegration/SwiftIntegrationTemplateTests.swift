import AnalyticsTestSupport
import AnalyticsCore
import Foundation
import Testing

/// examples/swift-integration built the way its README says, from a copy outside the repository
/// that depends on this package by its absolute path, then loaded and run by the host.
@Suite(.serialized) struct SwiftIntegrationTemplateTests {
    /// A directory outside the repository that stays the same between runs (the template's build
    /// is incremental), one per checkout (FNV-1a of the repository's path).
    static var copyDirectory: String {
        var hash: UInt64 = 0xcbf29ce484222325
        for byte in FixtureBuilder.root.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100000001b3 }
        return NSTemporaryDirectory() + "analytics-host-swift-integration-\(String(hash, radix: 16))"
    }

    @Test func theTemplateBuildsWithOneCommandExportsOnlyTheEntryAndLoads() throws {
        let copy = Self.copyDirectory
        let template = FixtureBuilder.root + "/examples/swift-integration"
        try? FileManager.default.createDirectory(atPath: copy + "/Sources/TallyIntegration", withIntermediateDirectories: true)
        for file in ["exports.map", "Sources/TallyIntegration/Tally.swift"] {
            let text = try String(contentsOfFile: template + "/" + file, encoding: .utf8)
            if (try? String(contentsOfFile: copy + "/" + file, encoding: .utf8)) != text {
                try text.write(toFile: copy + "/" + file, atomically: true, encoding: .utf8)
            }
        }
        let manifest = try String(contentsOfFile: template + "/Package.swift", encoding: .utf8)
        #expect(manifest.contains(#"path: "../..""#), "the template depends on the checkout by path")
        let moved = manifest.replacingOccurrences(of: #"path: "../..""#, with: "path: \"\(FixtureBuilder.root)\"")
        if (try? String(contentsOfFile: copy + "/Package.swift", encoding: .utf8)) != moved {
            try moved.write(toFile: copy + "/Package.swift", atomically: true, encoding: .utf8)
        }

        // The one command. The copy's build is incremental between runs; SwiftPM's build manifest
        // does not follow files added to or removed from a path dependency, so it is regenerated
        // (debug.yaml removed, objects kept), and a failed incremental build is redone from clean.
        try? FileManager.default.removeItem(atPath: copy + "/.build/debug.yaml")
        var build = try FixtureBuilder.capture("/usr/bin/env", ["swift", "build"], directory: copy)
        if build.status != 0 {
            try? FileManager.default.removeItem(atPath: copy + "/.build")
            build = try FixtureBuilder.capture("/usr/bin/env", ["swift", "build"], directory: copy)
        }
        #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        let library = copy + "/.build/debug/libTallyIntegration.so"

        let symbols = try FixtureBuilder.capture("/usr/bin/nm", ["-D", "--defined-only", library])
        let globals = symbols.stdout.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            return fields.count == 3 && fields[1].first!.isUppercase ? String(fields[2]) : nil
        }
        #expect(globals == ["analytics_host_plugin_v1"], "exports.map must leave only the entry function: \(globals.prefix(5))")

        let dir = makeTempDirectory("template")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/plugins", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: library, toPath: dir + "/plugins/libTallyIntegration.so")
        let listed = try HostBinary.run(["plugins", "--plugins", dir + "/plugins", "--json"], in: dir)
        #expect(listed.status == 0, "\(listed.stdout)\(listed.stderr)")
        let entry = try JSON(parsing: listed.stdout)["libraries"]?.arrayValue?.first
        #expect(entry?["key"] == "Tally" && entry?["language"] == "swift" && entry?["status"] == "loaded")
        // Tally conforms to TrackHook and FlushHook only: the listing names those (and destroy).
        #expect(entry?["hooks"] == .array(["track", "flush", "destroy"]), "\(listed.stdout)")

        try #"{"integrations":{"Tally":{}}}"#.write(toFile: dir + "/settings.json", atomically: true, encoding: .utf8)
        let events = (1...3).map { #"{"type":"track","event":"E\#($0)","userId":"u"}"# }.joined(separator: "\n") + "\n"
        let run = try HostBinary.run(["run", "--settings", dir + "/settings.json", "--plugins", dir + "/plugins", "--storage", dir + "/storage", "--quiet"],
                                     stdin: events, in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("Tally: 3 track calls so far"), "\(run.stderr)")
    }
}
