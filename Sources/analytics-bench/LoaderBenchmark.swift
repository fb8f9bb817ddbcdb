import AnalyticsCore
import Foundation

/// Builds `count` copies of the no-op C integration (keys Dest0…) with gcc into a new directory.
func buildNoOpLibraries(count: Int) -> String {
    let dir = NSTemporaryDirectory() + "analytics-bench-plugins-\(UUID().uuidString)"
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    for i in 0..<count {
        let gcc = Process()
        gcc.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
        gcc.arguments = ["-std=c99", "-shared", "-fPIC", "-O2", "-I", "include", "-DKEY=\"Dest\(i)\"",
                         "-o", "\(dir)/libdest\(i).so", "Tests/Fixtures/noop.c"]
        try! gcc.run()
        gcc.waitUntilExit()
        precondition(gcc.terminationStatus == 0, "gcc failed building the no-op integration (run from the package root)")
    }
    return dir
}

/// Milliseconds to scan a directory of `count` libraries: dlopen, entry call, negotiation (best of 5,
/// each in a fresh copy of the files so the dynamic loader really opens them).
func loadTimeBenchmark(count: Int) -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let dir = buildNoOpLibraries(count: count)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = monotonicSeconds()
        let scan = PluginLoader().scan(directory: dir)
        let ms = (monotonicSeconds() - start) * 1000
        precondition(scan.libraries.count == count && scan.problems.isEmpty, "\(scan.problems)")
        best = min(best, ms)
    }
    return best
}
