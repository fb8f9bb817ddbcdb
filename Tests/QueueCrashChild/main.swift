// Test helper for DurableQueueCrashTests: a process that writes to a DurableQueue until it is
// SIGKILLed, announcing on stdout (one write(2) per line, so a line is either whole or absent)
// exactly what the queue has accepted:
//   "ready"          the queue is open
//   "a <i>"          event i was appended (append returned)
//   "p <i>,<j>,..."  a batch with these events was peeked and is about to be acknowledged
//   "d"              that batch's acknowledge returned
//   "e <message>"    the queue reported a repaired problem
// Usage: queue-crash-child run <dir> <firstIndex> <segmentBytes> <ackEvery> <seed>
//        queue-crash-child bench <dir> <events> <eventBytes>    (throughput timing, release build)
//        queue-crash-child hold <dir>                           (open, print "ready", wait for stdin EOF)
//        queue-crash-child jobcontrol <dir>    (a client with applicationEventsFromJobControl: prints
//                                               "app <name>" per application event and "flush" per
//                                               flush, "ready", then at stdin EOF shuts down, "done")
import AnalyticsCore
#if canImport(Glibc)
import Glibc
#endif

func say(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(10)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    let bytes = Array("queue-crash-child: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}

func event(_ index: Int, size: Int) -> [UInt8] {
    let head = "{\"i\":\(index),\"type\":\"track\",\"event\":\"Crash Test\",\"pad\":\""
    let padding = max(0, size - head.utf8.count - 2)
    return Array(head.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: padding) + Array("\"}".utf8)
}

func eventIndex(_ event: ArraySlice<UInt8>) -> Int {
    guard let json = try? JSON(parsing: Array(event)), case .number(let value)? = json["i"] else {
        fail("unreadable event \(String(decoding: event, as: UTF8.self).prefix(80))")
    }
    return Int(value.value)
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// CPU seconds (user + system) used so far: a rate that other load on the machine does not skew.
func cpu() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: run|bench|hold|jobcontrol <dir> ...") }
let directory = arguments[2]

switch arguments[1] {
case "run":
    guard arguments.count == 7, let first = Int(arguments[3]), let segmentBytes = Int(arguments[4]),
          let ackEvery = Int(arguments[5]), let seed = UInt64(arguments[6]) else { fail("bad run arguments") }
    var generator = seed | 1
    func random(_ bound: Int) -> Int {
        generator ^= generator << 13; generator ^= generator >> 7; generator ^= generator << 17
        return Int(generator % UInt64(bound))
    }
    let queue: DurableQueue
    do {
        queue = try DurableQueue(directory: directory,
                                 configuration: .init(maxDiskBytes: 1 << 30, segmentBytes: segmentBytes),
                                 onError: { error in say("e \(error)") })
    } catch { fail("open: \(error)") }
    say("ready")
    var index = first
    while index < first + 50_000_000 {
        do { try queue.append(event(index, size: 400 + random(400))) } catch { fail("append: \(error)") }
        say("a \(index)")
        if ackEvery > 0 && index % ackEvery == 0 {
            do {
                let batch = try queue.peekBatch(maxEvents: 1 + random(60), maxBytes: 475_000)
                say("p " + batch.map { String(eventIndex($0)) }.joined(separator: ","))
                try queue.acknowledge(batch)
                say("d")
            } catch { fail("consume: \(error)") }
        }
        index += 1
    }

case "bench":
    guard arguments.count == 5, let count = Int(arguments[3]), let size = Int(arguments[4]) else { fail("bad bench arguments") }
    do {
        let queue = try DurableQueue(directory: directory, configuration: .init(maxDiskBytes: 4 << 30))
        let payloads = (0..<1024).map { event($0, size: size) }
        var start = now()
        var startCPU = cpu()
        for i in 0..<count { try queue.append(payloads[i & 1023]) }
        let appendSeconds = now() - start
        let appendCPU = cpu() - startCPU
        say("append: \(count) events of \(size) bytes in \(appendSeconds) s = \(Int(Double(count) / appendSeconds)) events/s, \(Int(Double(count * size) / appendSeconds / 1e6)) MB/s; per CPU second: \(Int(Double(count) / appendCPU)) events")
        start = now()
        startCPU = cpu()
        var read = 0
        var bodyBytes = 0
        while true {
            let batch = try queue.peekBatch(maxEvents: 2500, maxBytes: 475_000)
            if batch.isEmpty { break }
            bodyBytes += batch.jsonArrayBytes().count
            read += batch.count
            try queue.acknowledge(batch)
        }
        let readSeconds = now() - start
        let readCPU = cpu() - startCPU
        say("read+ack: \(read) events in \(readSeconds) s = \(Int(Double(read) / readSeconds)) events/s (\(bodyBytes) body bytes); per CPU second: \(Int(Double(read) / readCPU)) events")
        start = now()
        try queue.close()
        say("close: \(now() - start) s")
    } catch { fail("bench: \(error)") }

case "hold":
    do {
        let queue = try DurableQueue(directory: directory)
        say("ready")
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        try queue.close()
    } catch { fail("hold: \(error)") }

case "jobcontrol":
    let analytics = Analytics(configuration: Configuration(writeKey: "job-control")
        .storageDirectory(directory)
        .settingsLocation(.defaultsOnly)
        .trackApplicationLifecycleEvents(false)
        .autoAddSegmentDestination(false)
        .applicationEventsFromJobControl(true)
        .add(plugin: ApplicationPrinter()))
    say("ready")
    var byte: UInt8 = 0
    while read(0, &byte, 1) > 0 {}
    analytics.shutdown()
    say("done")

default:
    fail("unknown mode \(arguments[1])")
}


/// Prints what the job-control mode's client hears.
final class ApplicationPrinter: UtilityPlugin, ApplicationLifecycle {
    func application(_ event: ApplicationEvent) { say("app \(event.name)") }
    func flush() { say("flush") }
}
