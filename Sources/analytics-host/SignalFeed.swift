import AnalyticsCore
import Foundation
import Glibc

/// `run --signals FILE`: NDJSON signals (`{type, data, timestamp?, anonymousId?}` per line)
/// interleaved with the events of `--input`. Before each event, the signals recorded at or before
/// its timestamp are emitted (both must carry one); a signal or event without a timestamp takes
/// turns instead: one signal per event. Whatever is left is emitted after the last event. Bad
/// lines are reported with their line number and counted as rejected.
final class SignalFeed {
    private let fd: Int32
    private var reader: LineReader
    private let signals: Signals
    private let errors: ErrorPrinter
    private let path: String
    private var next: (json: JSONObject, timestamp: Date?, line: Int)?
    private var ended = false
    private(set) var accepted = 0
    private(set) var rejected = 0

    init(path: String, signals: Signals, errors: ErrorPrinter) throws {
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw UsageError("cannot read signals \(path): \(String(cString: strerror(errno)))") }
        reader = LineReader(fd: fd, maximumLineBytes: BatchLimits.maxEventBytes)
        self.signals = signals
        self.errors = errors
        self.path = path
    }

    deinit { close(fd) }

    /// Emits the signals due before an event with this timestamp.
    func emitDue(before eventTimestamp: String?) {
        let eventTime = eventTimestamp.flatMap(SignalFeed.parse)
        var turns = 0
        while let (json, time, line) = peek() {
            if let time, let eventTime {
                guard time <= eventTime else { return }
            } else {
                guard turns == 0 else { return }
                turns += 1
            }
            next = nil
            emit(json, line: line)
        }
    }

    /// Emits every signal left.
    func emitRest() {
        while let (json, _, line) = peek() {
            next = nil
            emit(json, line: line)
        }
    }

    private func emit(_ json: JSONObject, line: Int) {
        do {
            // With the wait policy, emit holds us when the dispatcher is behind (nil only when stopping).
            if try signals.emit(json: json) != nil { accepted += 1 }
        } catch {
            reject(error.description, line: line)
        }
    }

    private func reject(_ problem: String, line: Int) {
        rejected += 1
        FileHandle.standardError.write(Data("analytics-host: signals line \(line): \(TerminalText.escaped(problem))\n".utf8))
    }

    /// The next well-formed signal object (bad lines are reported and skipped).
    private func peek() -> (JSONObject, Date?, Int)? {
        while next == nil && !ended && !StopSignal.requested {
            var problem: String?
            var parsed: JSONObject?
            let more = reader.next { next in
                let line: UnsafeBufferPointer<UInt8>
                switch next {
                case .tooLong(let bytes):
                    problem = "\(bytes) bytes, over the \(BatchLimits.maxEventBytes)-byte line limit; skipped"
                    return
                case .text(let text):
                    line = text
                }
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
                do throws(JSONParseError) {
                    let value = try JSON(parsingUTF8: line)
                    guard case .object(let o) = value else { problem = "not a JSON object"; return }
                    parsed = o
                } catch {
                    problem = error.columnDescription
                }
            }
            guard more else { ended = true; break }
            if let problem { reject(problem, line: reader.lineNumber); continue }
            if let parsed { next = (parsed, parsed["timestamp"]?.stringValue.flatMap(SignalFeed.parse), reader.lineNumber) }
        }
        return next
    }

    nonisolated(unsafe) private static let withFraction: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()
    nonisolated(unsafe) private static let plain = ISO8601DateFormatter()

    static func parse(_ text: String) -> Date? { withFraction.date(from: text) ?? plain.date(from: text) }
}
