import Foundation
import Glibc

/// One figure of the benchmark table.
struct BenchRow {
    var name: String
    var value: String
    var target: String = ""
}

/// Collects rows and prints them as one Markdown table (pasted as-is into docs/benchmarks.md).
final class BenchTable {
    private(set) var rows: [BenchRow] = []

    func add(_ name: String, _ value: String, target: String = "") {
        rows.append(BenchRow(name: name, value: value, target: target))
        FileHandle.standardError.write(Data("  \(name): \(value)\n".utf8))
    }

    func render() -> String {
        let w0 = max(9, rows.map(\.name.count).max() ?? 0)
        let w1 = max(6, rows.map(\.value.count).max() ?? 0)
        let w2 = max(6, rows.map(\.target.count).max() ?? 0)
        func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }
        var out = "| \(pad("benchmark", w0)) | \(pad("result", w1)) | \(pad("target", w2)) |\n"
        out += "|\(String(repeating: "-", count: w0 + 2))|\(String(repeating: "-", count: w1 + 2))|\(String(repeating: "-", count: w2 + 2))|\n"
        for r in rows { out += "| \(pad(r.name, w0)) | \(pad(r.value, w1)) | \(pad(r.target, w2)) |\n" }
        return out
    }
}

func formatRate(_ perSecond: Double) -> String {
    let n = Int(perSecond.rounded())
    var s = String(n)
    var i = s.count - 3
    while i > 0 { s.insert(",", at: s.index(s.startIndex, offsetBy: i)); i -= 3 }
    return s
}

/// Peak resident set size of this process so far, in MiB.
func peakRSSMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// CPU seconds this process used so far (user + system, every thread): the stable figure on a
/// shared machine, where wall-clock rates move with the other processes.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// With ANALYTICS_BENCH_THREADS set: each thread's name, user and system CPU time and
/// context switches (from /proc), to see where a row's time goes.
func dumpThreads(_ label: String) {
    guard ProcessInfo.processInfo.environment["ANALYTICS_BENCH_THREADS"] != nil,
          let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return }
    var lines: [String] = []
    for tid in tids.sorted(by: { Int($0) ?? 0 < Int($1) ?? 0 }) {
        let base = "/proc/self/task/\(tid)/"
        let name = (try? String(contentsOfFile: base + "comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        let stat = (try? String(contentsOfFile: base + "stat", encoding: .utf8)) ?? ""
        // Fields after the parenthesised name: state is 3rd; utime and stime are the 14th and 15th.
        let fields = stat.split(separator: ")").last.map { $0.split(separator: " ") } ?? []
        let status = (try? String(contentsOfFile: base + "status", encoding: .utf8)) ?? ""
        let ctx = status.split(separator: "\n").filter { $0.contains("ctxt_switches") }.map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]), user + system >= 5 else { continue }
        lines.append(String(format: "    %-24@ user %6.2f s  sys %6.2f s  ctxsw vol %@ invol %@", name as NSString, user / 100, system / 100,
                            ctx.first ?? "?", ctx.last ?? "?"))
    }
    FileHandle.standardError.write(Data("  threads after \(label) (cumulative):\n\(lines.joined(separator: "\n"))\n".utf8))
}

/// A benchmark's own sanity check (every event counted, nothing shed…). Unlike `precondition`, it
/// says what failed in a release build, where a precondition's message is compiled out.
func benchCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String = "",
                file: StaticString = #fileID, line: UInt = #line) {
    if condition() { return }
    FileHandle.standardError.write(Data("analytics-bench: check failed at \(file):\(line): \(message())\n".utf8))
    exit(1)
}
