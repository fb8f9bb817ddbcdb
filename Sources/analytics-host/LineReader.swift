import Glibc

/// Reads newline-delimited input from a file descriptor in large blocks and hands out each line as
/// bytes, without building a String per line. The last line may lack its newline.
struct LineReader: ~Copyable {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var eof = false
    private(set) var lineNumber = 0

    init(fd: Int32) { self.fd = fd }

    /// Calls `body` with the next line (without "\n" or a trailing "\r"); false at end of input.
    mutating func next(_ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        while true {
            if let nl = buffer[start...].firstIndex(of: 0x0A) {
                var end = nl
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                lineNumber += 1
                buffer.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<end])) }
                start = nl + 1
                return true
            }
            if eof {
                guard start < buffer.count else { return false }
                var end = buffer.count
                if buffer[end - 1] == 0x0D { end -= 1 }  // a last line without "\n" loses its "\r" too
                lineNumber += 1
                buffer.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<end])) }
                start = buffer.count
                return true
            }
            fill()
        }
    }

    private mutating func fill() {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        // Wait in short polls: a stop signal may be delivered to any thread, so a blocking read
        // on this one would not notice it.
        var n = 0
        while true {
            if StopSignal.requested { eof = true; break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            n = buffer.withUnsafeMutableBufferPointer { read(fd, $0.baseAddress! + old, chunk) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { eof = true; n = 0 }
            break
        }
        buffer.removeLast(chunk - n)
    }
}
