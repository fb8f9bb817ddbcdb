import Glibc

/// Reads newline-delimited input from a file descriptor in large blocks and hands out each line as
/// bytes, without building a String per line. The last line may lack its newline.
///
/// Linear in the input and bounded in memory: each byte is searched for a newline once, and a line
/// longer than `maximumLineBytes` is not kept — its bytes are counted and dropped up to its
/// newline, and it is handed out as `.tooLong` — so the buffer never holds more than the limit
/// plus one read block, whatever the input.
struct LineReader: ~Copyable {
    enum Line {
        /// A line without its "\n" (or "\r\n"; a last line without "\n" loses a final "\r" too).
        /// Valid only during the callback.
        case text(UnsafeBufferPointer<UInt8>)
        /// A line over the limit, skipped; `bytes` is its length without the newline.
        case tooLong(bytes: Int)
    }

    /// Why reading stopped before the end of the input.
    private(set) var readError: Int32?
    private(set) var lineNumber = 0
    let maximumLineBytes: Int

    private let fd: Int32
    private let block: Int
    private let capacity: Int
    private let buffer: UnsafeMutablePointer<UInt8>
    /// Unconsumed bytes are buffer[start..<end]; buffer[start..<scanned] holds no newline.
    private var start = 0
    private var scanned = 0
    private var end = 0
    /// Bytes of an over-long line dropped so far (nil: not inside one).
    private var skipped: Int?
    private var eof = false

    init(fd: Int32, maximumLineBytes: Int, block: Int = 1 << 16) {
        self.fd = fd
        self.maximumLineBytes = maximumLineBytes
        self.block = block
        // A line at the limit plus a full block always fits, so a read is never smaller than a block.
        capacity = maximumLineBytes + 2 * block
        buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// Calls `body` with the next line; false at the end of input.
    mutating func next(_ body: (Line) -> Void) -> Bool {
        while true {
            if let nl = memchr(buffer + scanned, 0x0A, end - scanned) {
                let newline = buffer.distance(to: nl.assumingMemoryBound(to: UInt8.self))
                var lineEnd = newline
                if lineEnd > start && buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                lineNumber += 1
                if let dropped = skipped {
                    skipped = nil
                    body(.tooLong(bytes: dropped + lineEnd - start))
                } else if lineEnd - start > maximumLineBytes {
                    body(.tooLong(bytes: lineEnd - start))
                } else {
                    body(.text(UnsafeBufferPointer(start: buffer + start, count: lineEnd - start)))
                }
                start = newline + 1
                scanned = start
                return true
            }
            scanned = end
            // One byte of slack: a line at the limit may still be followed by its "\r".
            if skipped != nil || end - start > maximumLineBytes + 1 {
                // Inside an over-long line: count what has been read of it and let it go.
                skipped = (skipped ?? 0) + end - start
                start = 0; scanned = 0; end = 0
            }
            if eof {
                if let dropped = skipped {
                    skipped = nil
                    lineNumber += 1
                    body(.tooLong(bytes: dropped))
                    return true
                }
                guard start < end else { return false }
                var lineEnd = end
                if buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }  // a last line without "\n" loses its "\r" too
                lineNumber += 1
                if lineEnd - start > maximumLineBytes {
                    // The one byte of slack above was not a "\r": the last line is one over the limit.
                    body(.tooLong(bytes: lineEnd - start))
                } else {
                    body(.text(UnsafeBufferPointer(start: buffer + start, count: lineEnd - start)))
                }
                start = end; scanned = end
                return true
            }
            fill()
        }
    }

    /// Reads one block (or what is available) after the unconsumed bytes, moving them to the front
    /// first when less than a block is free behind them (they are at most the limit long).
    private mutating func fill() {
        if capacity - end < block {
            let count = end - start
            if count > 0 { memmove(buffer, buffer + start, count) }
            scanned -= start
            start = 0
            end = count
        }
        // Wait in short polls: a stop signal may be delivered to any thread, so a blocking read
        // on this one would not notice it.
        while true {
            if StopSignal.requested { eof = true; return }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            let n = read(fd, buffer + end, capacity - end)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n < 0 { readError = errno }
            if n <= 0 { eof = true; return }
            end += n
            return
        }
    }
}
