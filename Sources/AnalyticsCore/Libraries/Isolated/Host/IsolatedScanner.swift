import Foundation
import Glibc

/// Scans a plugins directory by loading each library in its own `analytics-plugin-runner`
/// (`--scan`): a library whose constructor crashes, calls `_exit` or prints is refused (or listed)
/// on its own line and nothing else is affected. Outcomes are cached by path, size, mtime and
/// inode (and this host's version and toolchain), so a start-up with unchanged libraries spawns
/// nothing.
package struct IsolatedScanner: Sendable {
    package var runner: String
    package var allowGroupOrOtherWritable = false
    /// Who the scan's runners run as when the host is root (`RunnerUser`).
    package var user = RunnerUser.nobody
    /// The cache file; nil: none.
    package var cacheFile: String?
    /// Longest wait for one library to load in its runner.
    package var timeout = 10.0

    package init(runner: String, allowGroupOrOtherWritable: Bool = false, cacheFile: String? = nil) {
        self.runner = runner
        self.allowGroupOrOtherWritable = allowGroupOrOtherWritable
        self.cacheFile = cacheFile
    }

    /// The default cache: `$XDG_CACHE_HOME/analytics-host/plugin-scan.json`, else under `~/.cache`.
    package static func defaultCacheFile() -> String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? NSTemporaryDirectory()) + "/.cache")
        return base + "/analytics-host/plugin-scan.json"
    }

    package struct Result: Sendable {
        /// What loaded, in file-name order.
        public var libraries: [NativeLibraryInfo]
        public var problems: [PluginLoadError]
        /// Libraries whose outcome came from the cache.
        public var cached: Int
    }

    package func scan(directory: String) -> Result {
        let listing = PluginDirectory.list(directory, allowInsecure: allowGroupOrOtherWritable)
        var cache = cacheFile.map(ScanCache.load) ?? [:]
        let files = listing.files
        let outcomes = Locked([Swift.Result<NativeLibraryInfo, PluginLoadError>?](repeating: nil, count: files.count))
        var toScan: [Int] = []
        var cached = 0
        var stamps: [String?] = []
        for (i, file) in files.enumerated() {
            let stamp = ScanCache.stamp(of: file)
            stamps.append(stamp)
            if let stamp, let entry = cache[file], entry["stamp"]?.stringValue == stamp,
               let record = entry["record"]?.objectValue, let outcome = ScanRecord.decode(record) {
                outcomes.withLock { $0[i] = outcome }
                cached += 1
            } else {
                toScan.append(i)
            }
        }
        let pending = toScan
        DispatchQueue.concurrentPerform(iterations: pending.count) { n in
            let i = pending[n]
            let outcome = scanOne(files[i])
            outcomes.withLock { $0[i] = outcome.result }
        }
        var changed = false
        let results = outcomes.withLock { $0 }
        for i in toScan {
            guard let stamp = stamps[i], let outcome = results[i] else { continue }
            let record: JSONObject
            switch outcome {
            case .success(let info): record = ScanRecord.encode(info)
            case .failure(let error):
                if case .runnerFailed(let text) = error.reason, text.contains("did not answer") { continue }  // maybe load
                record = ScanRecord.encode(error)
            }
            cache[files[i]] = ["stamp": .string(stamp), "record": .object(record)]
            changed = true
        }
        if changed, let cacheFile { ScanCache.save(cache, to: cacheFile) }

        var loaded: [NativeLibraryInfo] = []
        var problems = listing.problems
        for outcome in results {
            switch outcome {
            case .success(let info)?: loaded.append(info)
            case .failure(let error)?: problems.append(error)
            case nil: break
            }
        }
        var filesByKey: [String: [String]] = [:]
        for info in loaded { filesByKey[info.key, default: []].append(info.file) }
        var libraries: [NativeLibraryInfo] = []
        for info in loaded {
            let others = filesByKey[info.key]!
            if others.count == 1 { libraries.append(info) } else {
                problems.append(PluginLoadError(file: info.file, reason: .duplicateKey(key: info.key, otherFiles: others.filter { $0 != info.file })))
            }
        }
        return Result(libraries: libraries, problems: problems, cached: cached)
    }

    /// Loads one library in a runner; how it ended when it did not answer.
    func scanOne(_ file: String) -> (result: Swift.Result<NativeLibraryInfo, PluginLoadError>, Void) {
        func failed(_ text: String) -> (Swift.Result<NativeLibraryInfo, PluginLoadError>, Void) {
            (.failure(PluginLoadError(file: file, reason: .runnerFailed(text))), ())
        }
        // Handed open: the runner (another user under a root host) needs no path to it.
        if let problem = user.problem(readingFile: file) { return failed("not scanned: \(problem)") }
        let files: RunnerFiles
        do throws(RunnerFiles.OpenError) {
            files = try RunnerFiles.open(library: file)
        } catch {
            return failed("not scanned: \(error)")
        }
        let process: IsolatedProcess
        do throws(IsolatedProcess.SpawnError) {
            process = try IsolatedProcess.spawn(runner: runner, arguments: ["--scan", file, "--toolchain", SwiftToolchain.current] + user.arguments,
                                                label: (file as NSString).lastPathComponent, files: files)
        } catch {
            return failed("not scanned: \(error)")
        }
        let deadline = monotonicSeconds() + timeout
        guard process.readable(until: deadline) else {
            process.kill()
            process.wait()
            return failed("loading it in \(PluginRunnerLocator.executableName) did not answer within \(timeout) s (its constructor or entry function hangs); killed")
        }
        guard let (kind, payload) = process.readFrame(), kind == .ready || kind == .refused else {
            process.kill()
            let status = process.wait()
            return failed("loading it in \(PluginRunnerLocator.executableName): the process \(IsolatedProcess.describe(status: status)) "
                          + "before it answered (in a constructor or the entry function); not loaded")
        }
        process.wait()
        var r = WireReader(payload)
        guard let record = (try? JSON(parsing: r.text()))?.objectValue, let outcome = ScanRecord.decode(record) else {
            return failed("the runner answered something unreadable")
        }
        let named = switch outcome { case .success(let info): info.file; case .failure(let error): error.file }
        guard named == file else { return failed("the runner's record names another file (\(named))") }
        return (outcome, ())
    }
}

/// The scan cache: `{ "version": ..., "entries": { path: { "stamp": ..., "record": ... } } }`.
/// Written to a temporary file and renamed, so readers never see half of it; entries of files
/// that are gone are dropped on write.
enum ScanCache {
    static var version: String { "\(HostVersion.string) \(SwiftToolchain.current)" }

    static func load(_ path: String) -> [String: JSONObject] {
        guard let data = FileManager.default.contents(atPath: path), let o = (try? JSON(parsing: data))?.objectValue,
              o["version"]?.stringValue == version, let entries = o["entries"]?.objectValue else { return [:] }
        var out: [String: JSONObject] = [:]
        for (k, v) in entries { if let v = v.objectValue { out[k] = v } }
        return out
    }

    static func save(_ entries: [String: JSONObject], to path: String) {
        var kept: JSONObject = [:]
        for (file, entry) in entries where access(file, F_OK) == 0 { kept[file] = .object(entry) }
        let text = JSON.object(["version": .string(version), "entries": .object(kept)]).serializedBytes()
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let temporary = path + ".\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text)) else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// "size:mtime-seconds.nanoseconds:inode", or nil when the file cannot be stat'ed.
    static func stamp(of file: String) -> String? {
        var st = stat()
        guard stat(file, &st) == 0 else { return nil }
        return "\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec):\(st.st_ino)"
    }
}
