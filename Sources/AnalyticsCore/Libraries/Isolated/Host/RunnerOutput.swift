import Foundation
import Glibc

/// What a runner prints (its standard output and error, one pipe) goes to the host's standard
/// error one line at a time, each prefixed with `runner <library>: `, made harmless and bounded
/// by `LibraryOutput` (controls shown as `?`, lines cut at 4 KiB, a rate per library): a library
/// cannot print lines that pass for the host's, move the cursor over them, or flood the host's
/// standard error.
enum RunnerOutput {
    static let maxLine = LibraryOutput.maxLine

    /// Reads `fd` (the pipe's read end, owned from here) on a thread of its own until every
    /// writer closed it, i.e. the runner ended; the semaphore is signalled then, once the last
    /// line and the count of the lines suppressed were written.
    static func forward(_ fd: Int32, label: String) -> DispatchSemaphore {
        let ended = DispatchSemaphore(value: 0)
        let rate = LibraryOutput.rate(for: "runner " + label)
        let thread = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            // Past `maxLine`, the rest of a line is dropped up to its newline.
            var skipping = false
            func take(_ line: ArraySlice<UInt8>) {
                let (print, before) = rate.admit()
                if before > 0 { write(Array("runner \(label): \(LibraryOutput.suppressedText(before))\n".utf8)) }
                if print { write(RunnerOutput.line(line, label: label)) }
            }
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                var start = 0
                while start < n {
                    guard let newline = buffer[start..<n].firstIndex(of: 0x0A) else {
                        if !skipping { pending.append(contentsOf: buffer[start..<n]) }
                        break
                    }
                    if !skipping {
                        pending.append(contentsOf: buffer[start..<newline])
                        take(pending[...])
                    }
                    pending.removeAll(keepingCapacity: true)
                    skipping = false
                    start = newline + 1
                }
                if pending.count >= maxLine {
                    take(pending[...])
                    pending.removeAll(keepingCapacity: true)
                    skipping = true
                }
            }
            if !pending.isEmpty { take(pending[...]) }
            let left = rate.takeSuppressed()
            if left > 0 { write(Array("runner \(label): \(LibraryOutput.suppressedText(left))\n".utf8)) }
            close(fd)
            ended.signal()
        }
        thread.name = "runner output \(label)"
        thread.start()
        return ended
    }

    /// The line as the host prints it.
    static func line(_ bytes: ArraySlice<UInt8>, label: String) -> [UInt8] {
        Array("runner \(label): \(LibraryOutput.defused(bytes))\n".utf8)
    }

    private static func write(_ text: [UInt8]) {
        LibraryOutput.writeToStandardError(text)
    }
}
