import Foundation
import Glibc

/// What a runner prints (its standard output and error, one pipe) goes to the host's standard
/// error one line at a time, each prefixed with `runner <library>: `, control characters shown as
/// `?` and lines cut at `maxLine` bytes: a library cannot print lines that pass for the host's,
/// move the cursor over them, or hold the host's standard error.
enum RunnerOutput {
    static let maxLine = 4096

    /// Reads `fd` (the pipe's read end, owned from here) on a thread of its own until every
    /// writer closed it, i.e. the runner ended.
    static func forward(_ fd: Int32, label: String) {
        let thread = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[0..<n])
                while let newline = pending.firstIndex(of: 0x0A) {
                    emit(pending[..<newline], label: label)
                    pending.removeSubrange(...newline)
                }
                if pending.count >= maxLine {
                    emit(pending[...], label: label)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            if !pending.isEmpty { emit(pending[...], label: label) }
            close(fd)
        }
        thread.name = "runner output \(label)"
        thread.start()
    }

    /// The line as the host prints it.
    static func line(_ bytes: ArraySlice<UInt8>, label: String) -> [UInt8] {
        var out = Array("runner \(label): ".utf8)
        out.reserveCapacity(out.count + min(bytes.count, maxLine) + 1)
        for byte in bytes.prefix(maxLine) {
            out.append(byte < 0x20 && byte != 0x09 || byte == 0x7F ? UInt8(ascii: "?") : byte)
        }
        out.append(0x0A)
        return out
    }

    private static func emit(_ bytes: ArraySlice<UInt8>, label: String) {
        let text = line(bytes, label: label)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
