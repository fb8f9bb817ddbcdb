import CProcessControl

/// Which parts of the process-mode jail this machine's kernel provides, for `plugins` and the
/// docs (docs/isolation.md lists what each covers).
package enum JailMechanisms {
    /// The Landlock ABI of this kernel, 0 without Landlock.
    package static let landlockABI = Int(ah_process_landlock_abi())

    /// Whether a runner's system-call filter holds here: an architecture it is written for
    /// (x86-64, AArch64) and a kernel that takes seccomp filters.
    package static let seccompFilter: Bool = {
        #if arch(x86_64) || arch(arm64)
        return ah_process_seccomp_filter_available() == 1
        #else
        return false
        #endif
    }()

    /// One line per mechanism: what holds here, and what does not and why.
    package static var summary: [String] {
        var lines = [seccompFilter
                     ? "seccomp filter (signals only to itself, no new processes, no terminal input, no sockets of its own "
                       + "unless granted, no scheduling of the host, no io_uring/memfd/eBPF/namespaces; each refusal reported once)"
                     : "no seccomp filter here (\(filterMissingReason)): system calls are NOT refused (signals, new processes, "
                       + "sockets, the host's scheduling); only Landlock, the limits and the host's checks hold",
                     "own session, no capabilities, no_new_privs, cleaned environment, output prefixed by the host"]
        switch landlockABI {
        case 0: lines.append("no Landlock on this kernel: the file system is NOT confined (Linux 5.13+ with Landlock enabled needed)")
        case 1...3: lines.append("Landlock ABI \(landlockABI): file system confined (TCP and signal scoping need ABI 4 and 6)")
        case 4...5: lines.append("Landlock ABI \(landlockABI): file system and TCP bind/connect confined (signal scoping needs ABI 6)")
        default: lines.append("Landlock ABI \(landlockABI): file system, TCP bind/connect, signals and abstract sockets confined")
        }
        if let problem = RunnerPidsCgroup.parent.problem {
            lines.append("no pids cgroup (\(problem)): threads are not limited")
        } else {
            lines.append("pids cgroup: processes and threads limited, all killed when the library stops")
        }
        return lines
    }

    /// Why there is no filter: the architecture, or the kernel.
    static var filterMissingReason: String {
        #if arch(x86_64) || arch(arm64)
        return "this kernel takes no seccomp filters (CONFIG_SECCOMP_FILTER)"
        #else
        return "the filter is written for x86-64 and AArch64 only"
        #endif
    }
}
