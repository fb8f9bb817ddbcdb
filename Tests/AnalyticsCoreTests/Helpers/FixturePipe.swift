import Glibc

/// A pipe shared with a fixture library: the test writes a byte to release it, or reads what it
/// reports, blocking (never sleeping) until the library has written.
final class FixturePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe failed: \(errno)")
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// One byte for the library (it is waiting in `read`).
    func release(count: Int = 1) {
        for _ in 0..<count {
            var byte: UInt8 = 0x21
            precondition(write(writeEnd, &byte, 1) == 1)
        }
    }

    /// Blocks until the library wrote a whole line; returns it without the newline.
    func readLine() -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(readEnd, &byte, 1) == 1, byte != 0x0A { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Blocks until the library wrote one byte.
    func awaitByte() {
        var byte: UInt8 = 0
        precondition(read(readEnd, &byte, 1) == 1)
    }
}
