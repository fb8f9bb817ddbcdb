import Foundation

/// Executables of this package that tests run as child processes; `swift build` puts them next
/// to the test bundle.
public enum BuiltExecutable {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public static func path(_ name: String) throws -> String {
        var candidates: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append((exe as NSString).deletingLastPathComponent)
        }
        candidates.append((CommandLine.arguments[0] as NSString).deletingLastPathComponent)
        candidates.append(FixtureBuilder.root + "/.build/debug")
        for dir in candidates where FileManager.default.isExecutableFile(atPath: dir + "/" + name) {
            return dir + "/" + name
        }
        throw Missing(description: "\(name) not found in \(candidates); run `swift build` before `swift test`")
    }
}
