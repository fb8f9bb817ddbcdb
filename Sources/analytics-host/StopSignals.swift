import Glibc
import Synchronization

/// SIGINT / SIGTERM ask the run to stop reading, flush and exit cleanly; a second one exits at once.
enum StopSignal {
    static let count = Atomic<Int>(0)

    static var requested: Bool { count.load(ordering: .relaxed) > 0 }

    /// Call before any thread starts: threads inherit the mask, and a parent (a shell, a test
    /// runner) may have left these signals blocked.
    static func install() {
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        for sig in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in
                if StopSignal.count.wrappingAdd(1, ordering: .relaxed).newValue >= 2 { _exit(130) }
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // no SA_RESTART: a blocked read returns EINTR so the loop can stop
            sigaction(sig, &action, nil)
        }
    }
}
