import AnalyticsCore
import Foundation
import Glibc

// Test-only child for the Segment.io SIGKILL tests: a real client whose only destination is the
// built-in Segment.io destination, calling `track("Crash Test", properties: ["index": i])` in a
// loop until it is killed. After each call returns it writes "a <n>" (n calls have returned) to
// standard output, a pipe the test reads: those n events are accepted, so each must reach the
// server after a restart, however the child dies.
//
// With PLUGINS_DIR, the libraries there are loaded too (each enabled under its key, e.g. the
// EchoDurable fixture, which sends events back and reports each AH_OK on the same pipe), KEY with
// the settings object SETTINGS (JSON; default {}; `"isolation": "process"` there runs it in
// process mode). API_HOST "-" leaves Segment.io out (only the library's destination).
//
// usage: segment-crash-child STORAGE_DIR API_HOST FIRST_INDEX COUNT FLUSH_AT [PLUGINS_DIR KEY [SETTINGS]]
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { buf in _ = write(1, buf.baseAddress, buf.count) }
}

let args = CommandLine.arguments
guard (6...9).contains(args.count) && args.count != 7, let first = Int(args[3]), let count = Int(args[4]), let flushAt = Int(args[5]) else {
    FileHandle.standardError.write(Data("usage: segment-crash-child STORAGE_DIR API_HOST FIRST_INDEX COUNT FLUSH_AT [PLUGINS_DIR KEY [SETTINGS]]\n".utf8))
    exit(2)
}
var config = Configuration(writeKey: "crash-key", storageDirectory: args[1])
config.trackApplicationLifecycleEvents = false
var integrations: JSONObject = args[2] == "-" ? [:] : ["Segment.io": ["apiKey": "crash-key"]]
config.autoAddSegmentDestination = args[2] != "-"
if args.count >= 8 {
    config.pluginsDirectory = args[6]
    let settings = args.count >= 9 ? (try? JSON(parsing: args[8]))?.objectValue : nil
    integrations[args[7]] = .object(settings ?? [:])
}
config.defaultSettings = Settings(["integrations": .object(integrations)])
config.settingsLocation = .defaultsOnly
config.segment.apiHost = args[2]
config.segment.requestTimeout = 60
config.flushAt = flushAt
config.flushInterval = 3600
config.errorHandler = { error in say("e \(error)") }
let analytics: Analytics
do {
    analytics = try Analytics.start(configuration: config)
} catch {
    say("e \(error)")
    exit(1)
}
say("ready")

let filler = String(repeating: "crash test property text ", count: 8)
for index in first..<(first + count) {
    analytics.track("Crash Test", properties: ["index": .number(Double(index)), "filler": .string(filler)])
    say("a \(index - first + 1)")
}
say("done")
// Stay alive until killed (the tests SIGKILL; a closed stdin ends the child too).
var byte: UInt8 = 0
while read(0, &byte, 1) > 0 {}
