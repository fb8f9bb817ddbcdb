import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AnalyticsCore

/// Ids stay unique across `fork()`: the child does not repeat the parent's sequence.
@Suite struct MessageIDForkTests {
    @Test func aForkedChildDrawsDifferentIdsThanItsParent() throws {
        _ = MessageID.make()  // the generator exists before the fork, as in a running client
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let count = 1_000
        let pid = fork()
        if pid == 0 {
            // Child of a multi-threaded process: no allocation, raw words straight to the pipe.
            close(fds[0])
            var words = [UInt64](repeating: 0, count: 2)
            for _ in 0..<count {
                let (a, b) = MessageID.randomWords()
                words[0] = a
                words[1] = b
                _ = words.withUnsafeBytes { write(fds[1], $0.baseAddress, 16) }
            }
            _exit(0)
        }
        #expect(pid > 0)
        close(fds[1])
        var parent = Set<[UInt64]>()
        for _ in 0..<count {
            let (a, b) = MessageID.randomWords()
            parent.insert([a, b])
        }
        var child = Set<[UInt64]>()
        var buffer = [UInt64](repeating: 0, count: 2)
        var received = 0
        while received < count {
            var got = 0
            while got < 16 {
                let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress! + got, 16 - got) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                got += n
            }
            guard got == 16 else { break }
            child.insert(buffer)
            received += 1
        }
        close(fds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        #expect(status == 0)
        #expect(received == count)
        #expect(child.count == count && parent.count == count)
        let drawnByBoth = parent.intersection(child).count
        #expect(drawnByBoth == 0, "the child repeated \(drawnByBoth) of its parent's ids")
    }
}
