import Dispatch

/// Work for another thread, for code that may run inside a jailed `analytics-plugin-runner`:
/// each call gets a serial queue of its own, so calls still run side by side (libdispatch's
/// overcommit pool makes a thread when all of its threads are busy).
///
/// Never the global concurrent queues (`DispatchQueue.global()`, concurrent queues) there: on
/// Linux, libdispatch checks that pool's workers once a second by opening `/proc/<tid>/stat` of
/// each, which the runner's Landlock domain refuses (it reads its own `/proc/<pid>` only; reading
/// all of `/proc` would show it every process's command line), and it traps (SIGILL) when the open
/// fails while work waits in the pool. The overcommit pool is not checked.
package enum SideQueue {
    /// Runs `work` on a thread of its own queue, after `delay` seconds if given.
    package static func async(_ label: String, after delay: Double = 0, _ work: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: label)
        if delay > 0 { queue.asyncAfter(deadline: .now() + delay, execute: work) } else { queue.async(execute: work) }
    }
}
