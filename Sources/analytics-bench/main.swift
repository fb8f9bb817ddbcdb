import AnalyticsCore
import Foundation

// `make bench`: every figure of the project, measured in this one run, printed as one table.
let table = BenchTable()
FileHandle.standardError.write(Data("analytics-bench: measuring (release build, \(ProcessInfo.processInfo.activeProcessorCount) cores)\n".utf8))

// `analytics-bench command`: only the `run` row.
if CommandLine.arguments.dropFirst().first == "command" {
    let command = commandBenchmark(lines: 500_000)
    table.add("run: 500,000 lines, 256 KiB cap, 20 ms server: lines/s (delivered, exit)",
              "\(formatRate(command.linesPerSecond)) (\(command.received), \(command.status))")
    print(table.render())
    exit(0)
}

/// Signals: emit → processSignal with the seed's two generators; memory bounded by the buffer.
@MainActor func addSignalsRows(_ liveDirectory: String) {
    let small = signalsBenchmark(pluginsDirectory: liveDirectory, signals: 100_000)
    let large = signalsBenchmark(pluginsDirectory: liveDirectory, signals: 500_000)
    table.add("signals: emit → processSignal (trackScreens + trackAddToCart): signals/s", formatRate(large.signalsPerSecond),
              target: "≥ 50,000")
    table.add("signals: peak RSS, 100,000 vs 500,000 signals (MiB)", String(format: "%.0f vs %.0f (%d shed)",
              small.peakRSSMiB, large.peakRSSMiB, large.shed), target: "flat")
}

// `analytics-bench signals`: only the Signals rows (needs JavaScriptCore for the LivePlugins library).
if CommandLine.arguments.dropFirst().first == "signals" {
    let live = buildLiveLibrary()
    guard let liveDirectory = live.directory else {
        print("signals: skipped: \(live.problem ?? "?")")
        exit(0)
    }
    addSignalsRows(liveDirectory)
    try? FileManager.default.removeItem(atPath: liveDirectory)
    print(table.render())
    exit(0)
}

/// ABI 1.2 timeline plugins: a loaded C enrichment plugin vs an in-process Swift one doing the same.
@MainActor func addEnrichmentRows() {
    let keepLibrary = buildEnrichmentLibrary(replace: false)
    let replaceLibrary = buildEnrichmentLibrary(replace: true)
    for (label, library, replace) in [("keeps the event", keepLibrary, false), ("replaces the event", replaceLibrary, true)] {
        let native = timelinePluginBenchmark(library: library, events: 300_000)
        let swift = timelinePluginBenchmark(swift: SwiftEnrichment(replace: replace), events: 300_000)
        table.add("track() with 1 enrichment plugin that \(label), loaded C vs in-process Swift: µs/event",
                  String(format: "%.2f vs %.2f (ratio %.2f)", native.wall, swift.wall, native.wall / swift.wall))
        table.add("  the same, CPU µs/event (every thread)", String(format: "%.2f vs %.2f", native.cpu, swift.cpu))
        // Process mode: the plugin's every call is a round trip to its runner.
        let isolated = timelinePluginBenchmark(library: library, isolated: true, events: 30_000)
        table.add("  the same library in process mode (its own runner): µs/event",
                  String(format: "%.2f (in-process %.2f, ratio %.1f)", isolated.wall, native.wall, isolated.wall / native.wall))
    }
    let keepCall = keepCallBenchmark(library: keepLibrary)
    table.add("one KEEP call on an encoded event, loaded C vs in-process Swift plugin: ns",
              String(format: "%.0f vs %.0f (ratio %.2f)", keepCall.nativeNs, keepCall.swiftNs, keepCall.nativeNs / keepCall.swiftNs))
    for dir in [keepLibrary, replaceLibrary] { try? FileManager.default.removeItem(atPath: dir) }
}

/// LivePlugins: the seed's FixProductViewed as a JavaScript enrichment plugin (JavaScriptCore),
/// against the same pipeline without it (alternated three times, best of each).
@MainActor func addJavaScriptRows(_ liveDirectory: String) {
    var withJS = (eventsPerSecond: 0.0, microsecondsPerEvent: Double.infinity, cpuMicrosecondsPerEvent: Double.infinity)
    var without = withJS
    for _ in 0..<3 {
        let j = liveTimelineBenchmark(pluginsDirectory: liveDirectory, events: 200_000)
        if j.microsecondsPerEvent < withJS.microsecondsPerEvent { withJS = j }
        let p = timelineBenchmarkWithCPU(destinations: 1, events: 200_000)
        if p.microsecondsPerEvent < without.microsecondsPerEvent { without = p }
    }
    table.add("timeline + 1 JavaScript enrichment plugin (FixProductViewed): events/s", formatRate(withJS.eventsPerSecond),
              target: "≥ 100,000")
    table.add("JavaScript plugin cost per event (with − without): µs", String(format: "%.2f (%.2f vs %.2f)",
              withJS.microsecondsPerEvent - without.microsecondsPerEvent, withJS.microsecondsPerEvent, without.microsecondsPerEvent),
              target: "≤ 8")
    table.add("  the same in CPU time (every thread): µs", String(format: "%.2f (%.2f vs %.2f)",
              withJS.cpuMicrosecondsPerEvent - without.cpuMicrosecondsPerEvent, withJS.cpuMicrosecondsPerEvent,
              without.cpuMicrosecondsPerEvent))
}

// `analytics-bench live`: only the C enrichment and JavaScript rows (while working on that path).
if CommandLine.arguments.dropFirst().first == "live" {
    // `live profile N [DIR]`: one JavaScript run of N events, nothing else (for a profiler; DIR: a
    // directory holding libliveplugins.so already, for profilers under which `make` cannot run).
    if CommandLine.arguments.count > 3, CommandLine.arguments[2] == "profile", let n = Int(CommandLine.arguments[3]) {
        let given = CommandLine.arguments.count > 4 ? CommandLine.arguments[4] : nil
        let live = given.map { (directory: Optional($0), problem: Optional<String>.none) } ?? buildLiveLibrary()
        guard let liveDirectory = live.directory else { print("live: skipped: \(live.problem ?? "?")"); exit(0) }
        let r = liveTimelineBenchmark(pluginsDirectory: liveDirectory, events: n)
        print(String(format: "%.2f µs/event wall, %.2f CPU", r.microsecondsPerEvent, r.cpuMicrosecondsPerEvent))
        if given == nil { try? FileManager.default.removeItem(atPath: liveDirectory) }
        exit(0)
    }
    addEnrichmentRows()
    let live = buildLiveLibrary()
    guard let liveDirectory = live.directory else {
        print("live: skipped: \(live.problem ?? "?")")
        exit(0)
    }
    addJavaScriptRows(liveDirectory)
    try? FileManager.default.removeItem(atPath: liveDirectory)
    print(table.render())
    exit(0)
}

// `analytics-bench vendors [N]`: only the vendor libraries' rows (each to its loopback fake).
if CommandLine.arguments.dropFirst().first == "vendors" {
    addVendorRows(events: CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 20_000 : 20_000)
    print(table.render())
    exit(0)
}

// `analytics-bench run [LINES [VENDOR_LINES [receive|vendors|vendor:KEY]]]`: only the `run` rows: the floor,
// run → receive and run → each vendor library and all four, on a many-user input.
if CommandLine.arguments.dropFirst().first == "run" {
    let args = CommandLine.arguments
    addRunPathRows(lines: args.count > 2 ? Int(args[2]) ?? 1_000_000 : 1_000_000,
                   vendorLines: args.count > 3 ? Int(args[3]) ?? 20_000 : 20_000, only: args.count > 4 ? args[4] : nil)
    print(table.render())
    exit(0)
}

// `analytics-bench isolation`: only the process-isolation rows.
if CommandLine.arguments.dropFirst().first == "isolation" {
    addIsolationRows()
    print(table.render())
    exit(0)
}

// `analytics-bench realistic`: only the realistic rows (quicker while working on delivery).
if CommandLine.arguments.dropFirst().first == "realistic" {
    let count = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 500_000 : 500_000
    let libraries = buildNoOpLibraries(count: 10)
    let mix = realisticBenchmark(events: count, libraries: libraries, trackOnly: false)
    let trackOnly = realisticBenchmark(events: count, libraries: libraries, trackOnly: true)
    try? FileManager.default.removeItem(atPath: libraries)
    table.add("realistic mix / track only: events/s", "\(formatRate(mix.eventsPerSecond)) / \(formatRate(trackOnly.eventsPerSecond))")
    table.add("realistic mix / track only: peak RSS (MiB)", String(format: "%.0f / %.0f", mix.peakRSSMiB, trackOnly.peakRSSMiB))
    print(table.render())
    exit(0)
}

// `analytics-bench loaded [ROUNDS]`: only the loaded-vs-in-process rows (quicker while working on the workers).
if CommandLine.arguments.dropFirst().first == "loaded" {
    let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 3 : 3
    withLoadedDestinationLibraries { one, oneBatch, ten, tenBatch in
        LoadedDestinationComparison.measure(one: one, oneBatch: oneBatch, ten: ten, tenBatch: tenBatch, rounds: rounds).addRows(to: table)
        let hook = hookCallBenchmark(library: one)
        table.add("one hook call, loaded no-op C vs in-process Swift destination: ns", String(format: "%.0f vs %.0f (ratio %.2f)",
                  hook.nativeNs, hook.swiftNs, hook.nativeNs / hook.swiftNs), target: "ratio ≤ 1.5")
    }
    print(table.render())
    exit(0)
}

// `analytics-bench pipeline swift|native|batch K [N]`: one setup of the loaded comparison, alone
// (to profile it: `perf record -g analytics-bench pipeline native 10`).
if CommandLine.arguments.dropFirst().first == "pipeline", CommandLine.arguments.count > 3,
   let k = Int(CommandLine.arguments[3]) {
    let kind = CommandLine.arguments[2]
    let n = CommandLine.arguments.count > 4 ? Int(CommandLine.arguments[4]) ?? 1_000_000 : 1_000_000
    let libraries = kind == "swift" ? nil : buildNoOpLibraries(count: k, fixture: kind == "batch" ? "noop_batch" : "noop")
    let r = timelineBenchmarkWithCPU(destinations: k, events: n, loadedFrom: libraries)
    if let libraries { try? FileManager.default.removeItem(atPath: libraries) }
    table.add("whole pipeline, K=\(k) \(kind): events/s (µs wall / CPU per event)",
              "\(formatRate(r.eventsPerSecond)) (" + String(format: "%.2f / %.2f", r.microsecondsPerEvent, r.cpuMicrosecondsPerEvent) + ")")
    print(table.render())
    exit(0)
}

// `analytics-bench queue [N]`: only the durable queue row (append, then read back checked).
if CommandLine.arguments.dropFirst().first == "queue" {
    let count = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 500_000 : 500_000
    let queue = queueBenchmark(events: count)
    table.add("durable queue, \(count) events of 400 bytes: appends/s / checked reads/s", queueRowText(queue))
    print(table.render())
    exit(0)
}

// `analytics-bench upload [N]`: only the track() → acknowledged upload row.
if CommandLine.arguments.dropFirst().first == "upload" {
    let count = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 1_000_000 : 1_000_000
    let upload = uploadBenchmark(events: count)
    table.add("track() → acknowledged upload, \(count) events: events/s", formatRate(upload.eventsPerSecond), target: "≥ 100,000")
    print(table.render())
    exit(0)
}

/// The pipeline alone: K in-process no-op destinations.
@MainActor func addTimelineRows() {
    for k in [1, 10] {
        let r = timelineBenchmark(destinations: k, events: k == 1 ? 1_000_000 : 300_000)
        table.add("timeline, K=\(k) in-process no-op destination\(k > 1 ? "s" : ""): events/s", formatRate(r.eventsPerSecond),
                  target: k == 1 ? "≥ 300,000" : "≥ 150,000")
        table.add("timeline, K=\(k): µs/event", String(format: "%.2f", r.microsecondsPerEvent))
    }
}

// `analytics-bench timeline`: only the timeline rows.
if CommandLine.arguments.dropFirst().first == "timeline" {
    addTimelineRows()
    print(table.render())
    exit(0)
}

addTimelineRows()
// Identify changes the saved user state; it must cost about what track costs (best of three each).
var trackOnly = 0.0, withIdentify = 0.0
for _ in 0..<3 {
    trackOnly = max(trackOnly, timelineBenchmark(destinations: 1, events: 50_000).eventsPerSecond)
    withIdentify = max(withIdentify, timelineBenchmark(destinations: 1, events: 50_000, identifyEvery: 5).eventsPerSecond)
}
table.add("50,000 calls, 20 % identify vs track only (K=1): events/s",
          "\(formatRate(withIdentify)) vs \(formatRate(trackOnly)) (ratio \(String(format: "%.2f", withIdentify / trackOnly)))",
          target: "ratio ≥ 0.8")
let oneLibrary = buildNoOpLibraries(count: 1)
let tenLibraries = buildNoOpLibraries(count: 10)
let oneBatchLibrary = buildNoOpLibraries(count: 1, fixture: "noop_batch")
let tenBatchLibraries = buildNoOpLibraries(count: 10, fixture: "noop_batch")
LoadedDestinationComparison.measure(one: oneLibrary, oneBatch: oneBatchLibrary, ten: tenLibraries, tenBatch: tenBatchLibraries)
    .addRows(to: table)
let hook = hookCallBenchmark(library: oneLibrary)
table.add("one hook call, loaded no-op C vs in-process Swift destination: ns", String(format: "%.0f vs %.0f (ratio %.2f)",
          hook.nativeNs, hook.swiftNs, hook.nativeNs / hook.swiftNs), target: "ratio ≤ 1.5")
table.add("load 20 integration libraries (scan, dlopen, negotiate): ms", String(format: "%.1f", loadTimeBenchmark(count: 20)),
          target: "≤ 100")
let realistic = realisticBenchmark(events: 500_000, libraries: tenLibraries, trackOnly: false)
let realisticTrack = realisticBenchmark(events: 500_000, libraries: tenLibraries, trackOnly: true)
table.add("realistic: 70% track / 20% identify / 10% screen, 10 loaded C + Segment.io, routing rules: events/s",
          formatRate(realistic.eventsPerSecond), target: "≥ 100,000")
table.add("realistic, track only: events/s (mix ÷ track only)",
          String(format: "%@ (%.2f)", formatRate(realisticTrack.eventsPerSecond), realistic.eventsPerSecond / realisticTrack.eventsPerSecond),
          target: "≥ 0.80")
table.add("realistic: peak RSS, mix / track only (MiB)", String(format: "%.0f / %.0f", realistic.peakRSSMiB, realisticTrack.peakRSSMiB))
for dir in [oneLibrary, tenLibraries, oneBatchLibrary, tenBatchLibraries] { try? FileManager.default.removeItem(atPath: dir) }

// ABI 1.2 timeline plugins (C enrichment rows) and LivePlugins (JavaScript rows).
addEnrichmentRows()
let live = buildLiveLibrary()
if let liveDirectory = live.directory {
    addJavaScriptRows(liveDirectory)
    addSignalsRows(liveDirectory)
    try? FileManager.default.removeItem(atPath: liveDirectory)
} else {
    table.add("timeline + 1 JavaScript enrichment plugin (FixProductViewed): events/s", "skipped: \(live.problem ?? "?")")
}

addIsolationRows()
addVendorRows()
addRunPathRows()

let filter = filterBenchmark()
table.add("destination filter (match \"Order *\" + drop_properties): evaluations/s", formatRate(filter.evaluationsPerSecond),
          target: "≥ 1,000,000")
table.add("destination filter: ns/evaluation (wall / CPU)",
          String(format: "%.0f / %.0f", filter.nanosecondsPerEvaluation, lastFilterBenchmarkCPUNanosecondsPerEvaluation))
let smallUpload = uploadBenchmark(events: 200_000)
let upload = uploadBenchmark(events: 1_000_000)
table.add("track() → acknowledged upload, 1,000,000 events: events/s", formatRate(upload.eventsPerSecond), target: "≥ 100,000")
table.add("peak RSS during the upload run: 200,000 vs 1,000,000 events (MiB)",
          String(format: "%.0f vs %.0f", smallUpload.peakRSSMiB, upload.peakRSSMiB), target: "flat")
let queueRow = queueBenchmark(events: 500_000)
table.add("durable queue, 500,000 events of 400 bytes: appends/s / checked reads/s", queueRowText(queueRow))
let command = commandBenchmark(lines: 500_000)
table.add("run: 500,000 lines, 256 KiB disk cap, server answering in 20 ms: lines/s (delivered, exit)",
          "\(formatRate(command.linesPerSecond)) (\(command.received == 500_000 ? "all" : "\(command.received)"), \(command.status))",
          target: "all, 0")
table.add("peak RSS of the run (MiB)", String(format: "%.0f", peakRSSMiB()))
print(table.render())
