import AnalyticsCore
import Foundation
import Glibc

/// The progress line of `run` on standard error, shown only when that is a terminal: events read
/// and their rate; for a regular file also how far into it (bytes of the total, percent) and the
/// time left at the rate so far. It is redrawn at most four times a second and ends with a final
/// line when the input ends.
final class Progress {
    private let enabled: Bool
    private let input: Int32
    /// Size of the input when it is a regular file (a pipe, FIFO or terminal has none).
    private let total: Int64?
    private let start = monotonicSeconds()
    private var last = monotonicSeconds()
    private var shown = false

    init(enabled: Bool, input: Int32) {
        self.enabled = enabled
        self.input = input
        var info = stat()
        if enabled, fstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 {
            total = Int64(info.st_size)
        } else {
            total = nil
        }
    }

    func tick(_ count: Int) {
        guard enabled, count & 0x3FF == 0 else { return }
        let now = monotonicSeconds()
        guard now - last >= 0.25 else { return }
        last = now
        shown = true
        FileHandle.standardError.write(Data("\r\(line(count, elapsed: now - start, read: position))   ".utf8))
    }

    /// The last line (the whole file read, when it is one), then a line break.
    func finish(_ count: Int) {
        guard enabled, shown || total != nil else { return }
        let end = total.map { max($0, position ?? $0) }
        FileHandle.standardError.write(Data("\r\(line(count, elapsed: monotonicSeconds() - start, read: end))   \n".utf8))
    }

    /// Bytes of the input consumed so far (the reader's position in the file).
    private var position: Int64? {
        guard total != nil else { return nil }
        let offset = lseek(input, 0, SEEK_CUR)
        return offset >= 0 ? Int64(offset) : nil
    }

    /// "120,000 events, 40,000 events/s; 12.0 MB of 48.0 MB (25%), 0:09 left"
    func line(_ count: Int, elapsed: Double, read: Int64?) -> String {
        let rate = Double(count) / max(elapsed, 1e-9)
        var text = "\(Self.grouped(count)) events, \(Self.grouped(Int(rate))) events/s"
        if let total, let read {
            let done = min(1, Double(read) / Double(total))
            text += "; \(Self.megabytes(min(read, total))) of \(Self.megabytes(total)) (\(Int(done * 100))%)"
            if done >= 1 {
                text += ", done in \(Self.duration(elapsed))"
            } else if done > 0 {
                text += ", \(Self.duration(elapsed * (1 - done) / done)) left"
            }
        }
        return text
    }

    static func grouped(_ n: Int) -> String {
        var digits = Array(String(n))
        var i = digits.count - 3
        while i > 0 {
            digits.insert(",", at: i)
            i -= 3
        }
        return String(digits)
    }

    static func megabytes(_ bytes: Int64) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_000_000)
    }

    /// "0:09", "12:30", "2:05:00"
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        let (h, m, r) = (s / 3600, s / 60 % 60, s % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, r) : String(format: "%d:%02d", m, r)
    }
}
