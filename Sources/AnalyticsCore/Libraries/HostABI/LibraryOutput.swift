import Foundation

/// What a library makes the host print on its standard error (a runner's output, the lines a
/// library logs) is the library's input to the host's terminal: every line is made harmless and
/// bounded here, the same for both modes. Controls (C0 but tab, DEL, C1, as a character or as a
/// lone byte) are shown as `?`, so no escape sequence reaches the terminal; a line is cut at
/// `maxLine` bytes; and a library prints at most `burst` lines at once and `linesPerSecond` after
/// that: what is over is counted and said (`N lines suppressed`) before its next line and when
/// its output ends (a runner's: before the host reaps it; log lines: a second after the last
/// suppressed one, and when the client stops).
package enum LibraryOutput {
    package static let maxLine = 4096
    package static let burst = 1000.0
    package static let linesPerSecond = 100.0

    /// `bytes` as one line of text: controls and bytes that are not UTF-8 shown as `?`, at most
    /// `maxLine` bytes.
    package static func defused<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = String.UnicodeScalarView()
        var used = 0
        // Not UTF-8: each such byte is U+FFFD, then `?` (a lone 0x9B is CSI to an 8-bit terminal).
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            let shown: Unicode.Scalar = isControl(scalar) || scalar == "\u{FFFD}" ? "?" : scalar
            let size = UTF8.width(shown)
            if used + size > maxLine { break }
            used += size
            out.append(shown)
        }
        return String(out)
    }

    /// `text` made harmless the same way.
    package static func defused(_ text: String) -> String {
        if text.utf8.count <= maxLine, !text.unicodeScalars.contains(where: isControl) { return text }
        var out = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let shown: Unicode.Scalar = isControl(scalar) ? "?" : scalar
            let size = UTF8.width(shown)
            if used + size > maxLine { break }
            used += size
            out.append(shown)
        }
        return String(out)
    }

    /// `text` cut at `maxLine` bytes (at a character boundary), controls kept: a log handler
    /// escapes them itself (the command does).
    package static func cut(_ text: String) -> String {
        guard text.utf8.count > maxLine else { return text }
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: maxLine)
        while end > text.startIndex && end.samePosition(in: text.unicodeScalars) == nil { end = text.utf8.index(before: end) }
        return String(text[..<end]) + "…"
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || (0x7F...0x9F).contains(scalar.value)
    }

    /// The rate limits of libraries, by name (kept for the host's life: a runner that restarts
    /// does not get a new burst).
    private static let limits = Locked<[String: Rate]>([:])

    package static func rate(for name: String) -> Rate {
        limits.withLock { all in
            if let rate = all[name] { return rate }
            let rate = Rate()
            all[name] = rate
            return rate
        }
    }

    /// One library's lines: a token bucket of `burst` lines refilled at `linesPerSecond`.
    package final class Rate: Sendable {
        private struct State {
            var tokens = LibraryOutput.burst
            var last = monotonicSeconds()
            var suppressed = 0
            var armed = false
        }
        private let state = Locked(State())
        /// Held while a count is taken and said (`saySuppressed`), so a count taken by one
        /// thread is printed before another (the host stopping) goes on.
        private let saying = Lock()

        /// Whether a line may be printed now, and how many were suppressed before it (to say
        /// first); a suppressed line is counted.
        package func admit(now: Double = monotonicSeconds()) -> (print: Bool, suppressedBefore: Int) {
            state.withLock { s in
                s.tokens = min(LibraryOutput.burst, s.tokens + (now - s.last) * LibraryOutput.linesPerSecond)
                s.last = now
                guard s.tokens >= 1 else {
                    s.suppressed += 1
                    return (false, 0)
                }
                s.tokens -= 1
                defer { s.suppressed = 0 }
                return (true, s.suppressed)
            }
        }

        /// The lines suppressed since the last one printed (then 0).
        package func takeSuppressed() -> Int {
            state.withLock { s in
                defer { s.suppressed = 0; s.armed = false }
                return s.suppressed
            }
        }

        /// Takes the lines suppressed since the last one printed and, when there are any, says
        /// their count with `say`, before any other caller of this method goes on: the host
        /// stopping does not end while a timer that took the count has yet to print it.
        package func saySuppressed(_ say: (Int) -> Void) {
            saying.withLock {
                let count = takeSuppressed()
                if count > 0 { say(count) }
            }
        }

        /// True once per stretch of suppressed lines: the caller then says their count a
        /// moment later (`takeSuppressed`), even when no line follows.
        package func arm() -> Bool {
            state.withLock { s in
                guard !s.armed, s.suppressed > 0 else { return false }
                s.armed = true
                return true
            }
        }
    }

    /// Standard error's writers of lines a library caused (a runner's output, the command's log
    /// lines) take turns here: a line longer than a pipe writes at once (4 KiB: a cut line and
    /// its prefix can be) is never cut into by another thread's line.
    private static let standardErrorTurn = Lock()

    /// Writes `bytes` (whole lines) to standard error, all of them before another writer here.
    package static func writeToStandardError(_ bytes: [UInt8]) {
        standardErrorTurn.withLock {
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(2, raw.baseAddress! + offset, raw.count - offset)
                    if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { break }
                }
            }
        }
    }

    /// "N lines suppressed" as said after a library's name.
    package static func suppressedText(_ count: Int, what: String = "lines") -> String {
        "\(count) \(count == 1 ? String(what.dropLast()) : what) suppressed (more than \(Int(burst)) at once or \(Int(linesPerSecond)) a second)"
    }
}
