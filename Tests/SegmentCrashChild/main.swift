import AnalyticsCore
import Foundation
import Glibc

// Test-only child for the Segment.io SIGKILL tests: a real client whose only destination is the
// built-in Segment.io destination, streaming track events with messageIds "c-<index>" until it is
// killed. It prints "a <n>" whenever the destination has stored more events on disk: the first n
// events of the run are then accepted (the destination handles events in call order and stores
// each before the next; the child checks that none failed or overflowed and says so otherwise).
//
// usage: segment-crash-child STORAGE_DIR API_HOST FIRST_INDEX COUNT FLUSH_AT
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { buf in _ = write(1, buf.baseAddress, buf.count) }
}

let args = CommandLine.arguments
guard args.count == 6, let first = Int(args[3]), let count = Int(args[4]), let flushAt = Int(args[5]) else {
    FileHandle.standardError.write(Data("usage: segment-crash-child STORAGE_DIR API_HOST FIRST_INDEX COUNT FLUSH_AT\n".utf8))
    exit(2)
}
var config = Configuration(writeKey: "crash-key", storageDirectory: args[1])
config.trackApplicationLifecycleEvents = false
config.defaultSettings = Settings(["integrations": ["Segment.io": ["apiKey": "crash-key"]]])
config.settingsLocation = .defaultsOnly
config.segment.apiHost = args[2]
config.segment.requestTimeout = 60
config.flushAt = flushAt
config.flushInterval = 3600
config.errorHandler = { error in say("e \(error)") }
let analytics = Analytics(configuration: config)
guard let stats = analytics.timeline.stats(forKey: "Segment.io") else {
    say("e no Segment.io destination")
    exit(1)
}
say("ready")

var announced = 0
let filler = String(repeating: "crash test property text ", count: 8)
for index in first..<(first + count) {
    let payload: JSONObject = [
        "type": "track", "event": "Crash Test", "messageId": .string("c-\(index)"),
        "properties": ["index": .number(Double(index)), "filler": .string(filler)],
    ]
    do { try analytics.process(payload: payload) } catch {
        say("e \(error)")
        exit(1)
    }
    // Keep the destination's in-memory queue short so that nothing overflows: accepted events
    // are then exactly a prefix of the run.
    while stats.received - stats.delivered > 2_000 { sched_yield() }
    let stored = stats.delivered
    if stored > announced {
        if stats.failed > 0 || stats.overflowed > 0 { say("e failed \(stats.failed) overflowed \(stats.overflowed)") }
        announced = stored
        say("a \(stored)")
    }
}
while stats.delivered < count { sched_yield() }
say("a \(stats.delivered)")
say("done")
// Stay alive until killed (the tests SIGKILL; a closed stdin ends the child too).
var byte: UInt8 = 0
while read(0, &byte, 1) > 0 {}
