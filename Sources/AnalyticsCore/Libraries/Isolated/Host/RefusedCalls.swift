/// Names of the system calls a runner's filter refuses (the runner notes their numbers in its
/// progress page; the host reports each once per library, by name).
enum RefusedCalls {
    /// "kill", or "system call 999" for a number this table does not know.
    static func name(_ number: Int) -> String { names[number] ?? "system call \(number)" }

    /// What a refusal of `number` protects, for the report.
    static func purpose(_ name: String) -> String {
        switch name {
        case "kill", "tgkill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal", "pidfd_open":
            return "a signal to a process other than its own"
        case "fcntl": return "a descriptor owner or its signal (F_SETOWN, F_SETOWN_EX, F_SETSIG)"
        case "ioctl": return "typing into a terminal (TIOCSTI, TIOCLINUX)"
        case "prlimit64": return "the resource limits of another process"
        case "fork", "vfork", "clone", "clone3", "execve", "execveat": return "a new process"
        case "socket", "connect", "bind", "listen", "accept", "accept4", "sendto", "socketpair":
            return "a socket of its own, or an address for one: only the host's sockets without a network grant"
        case "setpriority", "ioprio_set", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr":
            return "the scheduling of another process"
        case "prctl": return "clearing its parent-death signal"
        case "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd": return "another process's memory or descriptors"
        case "unshare", "setns": return "a new namespace"
        default: return "a kernel-wide facility"
        }
    }

#if arch(x86_64)
    private static let names: [Int: String] = [
        16: "ioctl", 41: "socket", 42: "connect", 43: "accept", 44: "sendto", 49: "bind", 50: "listen", 53: "socketpair",
        141: "setpriority", 142: "sched_setparam", 144: "sched_setscheduler", 157: "prctl", 203: "sched_setaffinity",
        251: "ioprio_set", 288: "accept4", 314: "sched_setattr", 56: "clone", 57: "fork", 58: "vfork", 59: "execve", 62: "kill", 72: "fcntl",
        101: "ptrace", 103: "syslog", 129: "rt_sigqueueinfo", 153: "vhangup", 155: "pivot_root", 159: "adjtimex",
        161: "chroot", 163: "acct", 164: "settimeofday", 165: "mount", 166: "umount2", 167: "swapon", 168: "swapoff",
        169: "reboot", 170: "sethostname", 171: "setdomainname", 172: "iopl", 173: "ioperm", 175: "init_module",
        176: "delete_module", 179: "quotactl", 200: "tkill", 227: "clock_settime", 234: "tgkill", 246: "kexec_load",
        248: "add_key", 249: "request_key", 250: "keyctl", 272: "unshare", 297: "rt_tgsigqueueinfo",
        298: "perf_event_open", 302: "prlimit64", 303: "name_to_handle_at", 304: "open_by_handle_at",
        305: "clock_adjtime", 308: "setns", 310: "process_vm_readv", 311: "process_vm_writev", 312: "kcmp",
        313: "finit_module", 319: "memfd_create", 320: "kexec_file_load", 321: "bpf", 322: "execveat",
        323: "userfaultfd", 424: "pidfd_send_signal", 425: "io_uring_setup", 426: "io_uring_enter",
        427: "io_uring_register", 428: "open_tree", 429: "move_mount", 430: "fsopen", 432: "fsmount",
        434: "pidfd_open", 435: "clone3", 438: "pidfd_getfd"
    ]
#elseif arch(arm64)
    private static let names: [Int: String] = [
        25: "fcntl", 29: "ioctl", 30: "ioprio_set", 118: "sched_setparam", 119: "sched_setscheduler",
        122: "sched_setaffinity", 140: "setpriority", 167: "prctl", 199: "socketpair", 200: "bind", 201: "listen",
        202: "accept", 203: "connect", 206: "sendto", 242: "accept4", 274: "sched_setattr", 39: "umount2", 40: "mount", 41: "pivot_root", 51: "chroot", 58: "vhangup",
        60: "quotactl", 89: "acct", 97: "unshare", 104: "kexec_load", 105: "init_module", 106: "delete_module",
        112: "clock_settime", 116: "syslog", 117: "ptrace", 129: "kill", 130: "tkill", 131: "tgkill",
        138: "rt_sigqueueinfo", 142: "reboot", 161: "sethostname", 162: "setdomainname", 170: "settimeofday",
        171: "adjtimex", 198: "socket", 217: "add_key", 218: "request_key", 219: "keyctl", 220: "clone",
        221: "execve", 224: "swapon", 225: "swapoff", 240: "rt_tgsigqueueinfo", 241: "perf_event_open",
        261: "prlimit64", 266: "clock_adjtime", 268: "setns", 270: "process_vm_readv", 271: "process_vm_writev",
        272: "kcmp", 273: "finit_module", 279: "memfd_create", 280: "bpf", 281: "execveat", 282: "userfaultfd",
        294: "kexec_file_load", 424: "pidfd_send_signal", 425: "io_uring_setup", 426: "io_uring_enter",
        427: "io_uring_register", 428: "open_tree", 429: "move_mount", 430: "fsopen", 432: "fsmount",
        434: "pidfd_open", 435: "clone3", 438: "pidfd_getfd"
    ]
#else
    private static let names: [Int: String] = [:]
#endif
}
