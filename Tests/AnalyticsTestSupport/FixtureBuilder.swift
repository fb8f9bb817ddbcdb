import Foundation
import Glibc
import AnalyticsCore

/// Builds the C fixtures of `Tests/Fixtures` (and the example plugins) with gcc into temporary
/// directories while the tests run: every library a loader test opens is real.
public enum FixtureBuilder {
    public struct BuildError: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The package root, found from this file's location.
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Compiles `Tests/Fixtures/<fixture>.c` into `<directory>/<name>` as a shared object.
    @discardableResult
    public static func library(_ fixture: String, in directory: String, as name: String? = nil, defines: [String] = []) throws -> String {
        try sharedObject(source: "Tests/Fixtures/\(fixture).c", in: directory, as: name ?? "lib\(fixture).so",
                         flags: ["-Wall", "-Wextra", "-pedantic", "-Werror"] + defines.map { "-D\($0)" })
    }

    /// Compiles a source of the package with exactly the flags of `make plugins`.
    @discardableResult
    public static func plugin(_ source: String, in directory: String, as name: String) throws -> String {
        try sharedObject(source: source, in: directory, as: name, flags: [])
    }

    /// The C files of a vendor library (`Plugins/<folder>`) followed by those of
    /// `Plugins/VendorSupport`, which every vendor library compiles in: a build that lists only the
    /// vendor's folder would not link.
    public static func vendorSources(_ folder: String) -> [String] {
        ["Plugins/" + folder, "Plugins/VendorSupport"].flatMap { dir in
            ((try? FileManager.default.contentsOfDirectory(atPath: root + "/" + dir)) ?? [])
                .filter { $0.hasSuffix(".c") }.sorted().map { root + "/" + dir + "/" + $0 }
        }
    }

    public static func sharedObject(source: String, in directory: String, as name: String, flags: [String]) throws -> String {
        let output = directory + "/" + name
        try run("/usr/bin/gcc", ["-std=c99", "-shared", "-fPIC", "-O2", "-I", root + "/include"] + flags
                + ["-o", output, root + "/" + source])
        chmod(output, 0o755)
        return output
    }

    /// Compiles a fixture into an executable (for tests that need a C host in a child process).
    public static func executable(_ fixture: String, in directory: String) throws -> String {
        let output = directory + "/" + fixture
        try run("/usr/bin/gcc", ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-I", root + "/include",
                                 "-o", output, root + "/Tests/Fixtures/\(fixture).c", "-ldl"])
        return output
    }

    /// Runs a tool to completion; throws with its output when it fails.
    public static func run(_ tool: String, _ arguments: [String], stdin: Data? = nil) throws {
        let result = try capture(tool, arguments, stdin: stdin)
        guard result.status == 0 else {
            throw BuildError(description: "\(tool) \(arguments.joined(separator: " ")) failed (\(result.status)):\n\(result.stdout)\(result.stderr)")
        }
    }

    public struct ProcessOutput {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    public static func capture(_ tool: String, _ arguments: [String], stdin: Data? = nil, directory: String? = nil) throws -> ProcessOutput {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        // Both pipes are read while standard input is still being written, so a chatty child
        // never blocks on a full pipe while the test blocks writing to it.
        let errData = Locked(Data()), outData = Locked(Data())
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errData.withLock { $0 = data }
        }
        DispatchQueue.global().async(group: group) {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            outData.withLock { $0 = data }
        }
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        group.wait()
        process.waitUntilExit()
        return ProcessOutput(status: process.terminationStatus,
                             stdout: outData.withLock { String(decoding: $0, as: UTF8.self) },
                             stderr: errData.withLock { String(decoding: $0, as: UTF8.self) })
    }
}
