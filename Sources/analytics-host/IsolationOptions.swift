import AnalyticsCore

/// `--isolate` (every library in process mode) and `--isolate=Key1,Key2` (those keys), taken out of
/// the arguments before the other options are read (the option's value is optional); and
/// `--runner-user=UID[:GID]`, who runners run as when the host is root (default 65534:65534).
enum IsolationOptions {
    static func extract(_ arguments: [String]) throws -> (rest: [String], isolation: IsolationConfiguration) {
        var isolation = IsolationConfiguration()
        var rest: [String] = []
        for argument in arguments {
            if argument == "--isolate" {
                isolation.allLibraries = .process
            } else if argument.hasPrefix("--isolate=") {
                let keys = argument.dropFirst("--isolate=".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard !keys.isEmpty, !keys.contains(where: \.isEmpty) else { throw UsageError("--isolate= needs integration keys, e.g. --isolate=Amplitude,File") }
                for key in keys { isolation.byKey[key] = .process }
            } else if let user = try runnerUser(argument) {
                isolation.runnerUser = user
            } else {
                rest.append(argument)
            }
        }
        return (rest, isolation)
    }

    /// The user of `--runner-user=UID[:GID]`, nil when `argument` is another option.
    static func runnerUser(_ argument: String) throws -> RunnerUser? {
        guard argument.hasPrefix("--runner-user=") else { return nil }
        let parts = argument.dropFirst("--runner-user=".count).split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let uid = UInt32(parts[0]), uid != 0,
              let gid = parts.count == 2 ? UInt32(parts[1]) : uid, gid != 0 else {
            throw UsageError("--runner-user= needs a uid other than 0 and optionally a gid other than 0, e.g. --runner-user=65534:65534")
        }
        return RunnerUser(uid: uid, gid: gid)
    }

    /// `--isolate-memory BYTES`: the memory limit of each process-mode library (0: none).
    static func memoryLimit(_ text: String?) throws -> UInt64? {
        guard let text else { return nil }
        guard let bytes = UInt64(text) else { throw UsageError("--isolate-memory needs a number of bytes (0: no limit)") }
        return bytes
    }
}

import Foundation
