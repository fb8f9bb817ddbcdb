import CProcessControl

/// Which parts of the process-mode jail this machine's kernel provides, for `plugins` and the
/// docs (docs/isolation.md lists what each covers).
package enum JailMechanisms {
    /// The Landlock ABI of this kernel, 0 without Landlock.
    package static let landlockABI = Int(ah_process_landlock_abi())

    /// One line per mechanism: what holds here, and what does not and why.
    package static var summary: [String] {
        var lines = ["seccomp filter (signals only to itself, no new processes, no terminal input, no sockets but AF_UNIX "
                     + "unless granted, no io_uring/memfd/eBPF/namespaces; each refusal reported once)",
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
}
