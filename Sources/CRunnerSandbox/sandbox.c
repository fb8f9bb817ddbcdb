#define _GNU_SOURCE
#include "runner_sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/ucontext.h>
#include <grp.h>
#include <unistd.h>

static int close_above(int keep_max) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)keep_max + 1, ~0u, 0) == 0) return 1;
#endif
    /* Older kernels: list what is open. */
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return 0;
    int own = dirfd(dir);
    int fds[4096], n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && n < 4096) {
        int fd = atoi(entry->d_name);
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9' && fd > keep_max && fd != own) fds[n++] = fd;
    }
    closedir(dir);
    for (int i = 0; i < n; i++) close(fds[i]);
    return 1;
}

/* ---- capabilities ------------------------------------------------------------------------ */

/* Empties the bounding, ambient, effective, permitted and inheritable sets. A runner of a host
 * that runs as root then has uid 0 without any capability: no CAP_DAC_OVERRIDE, CAP_KILL,
 * CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_NET_ADMIN…, and an exec cannot give them back (the bounding
 * set is empty and no_new_privs is set). For an ordinary user the sets are empty already. */
static int drop_capabilities(void) {
    /* The bounding set first: dropping from it needs CAP_SETPCAP, which the capset below removes. */
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;  /* past the kernel's last capability */
        (void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);           /* EPERM without CAP_SETPCAP: nothing to drop */
    }
#ifdef PR_CAP_AMBIENT
    (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
#endif
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &header, none) != 0) return 0;
    struct __user_cap_data_struct now[2];
    if (syscall(SYS_capget, &header, now) != 0) return 0;
    return (now[0].effective | now[0].permitted | now[1].effective | now[1].permitted) == 0;
}

/* ---- the system-call filter -------------------------------------------------------------- */

#if defined(__x86_64__)
#define RUNNER_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define RUNNER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef RUNNER_AUDIT_ARCH
#define FILTER_MAX 512
struct filter { struct sock_filter code[FILTER_MAX]; unsigned n; };

static void emit(struct filter *f, unsigned short code, unsigned char jt, unsigned char jf, unsigned k) {
    if (f->n < FILTER_MAX) f->code[f->n++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}
static void load_nr(struct filter *f) { emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr)); }
/* The low 32 bits of the first argument (a pid_t or the clone flags). */
static void load_arg0(struct filter *f) {
    emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, args[0]));
}
/* The low 32 bits of the second argument (a fcntl command, an ioctl request). */
static void load_arg1(struct filter *f) {
    emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, args[1]));
}
/* The low or high 32 bits of argument `i` (both architectures are little-endian). */
static void load_arg_low(struct filter *f, unsigned i) {
    emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned)(offsetof(struct seccomp_data, args) + 8 * i));
}
static void load_arg_high(struct filter *f, unsigned i) {
    emit(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, (unsigned)(offsetof(struct seccomp_data, args) + 8 * i + 4));
}
static void ret(struct filter *f, unsigned value) { emit(f, BPF_RET | BPF_K, 0, 0, value); }
/* A refusal traps (SIGSYS, handled below): the handler records the call for the host and makes it
 * return -EPERM, so the library sees an ordinary error and the host can say what it tried. */
#define DENY_EPERM (SECCOMP_RET_TRAP | (EPERM & SECCOMP_RET_DATA))
#define DENY_ENOSYS (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

/* `nr` answers `value` (an ERRNO) without running. */
static void refuse(struct filter *f, long nr, unsigned value) {
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, (unsigned)nr);
    ret(f, value);
}

/* Refused without a report: a call on one of the library's own threads by its thread id (a
 * JavaScript engine or a thread pool setting its threads' scheduling does), which a filter cannot
 * tell from a thread of the host's. */
#define REFUSE_QUIETLY (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

/* `nr`, whose first argument is a process id: allowed only when it is this process (or, with
 * `zero_is_self`, 0). Any other id may be the host or one of its threads (a thread id is a process
 * id to kill), whose ids a filter cannot know. Leaves the number loaded. */
static void only_at_self(struct filter *f, long nr, unsigned self, int zero_is_self) {
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, (unsigned)nr);
    load_arg0(f);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 2, 0, self);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, zero_is_self ? 1 : 0, 0, 0);
    emit(f, BPF_JMP | BPF_JA, 0, 0, 1);
    ret(f, SECCOMP_RET_ALLOW);
    ret(f, DENY_EPERM);
    load_nr(f);
}

/* A scheduling call (`nr`, whose first argument is a process id): allowed on this process or 0;
 * any other id may be the host or one of its threads, whose ids a filter cannot know: refused,
 * reported when it is the host's own pid (`host`), quietly otherwise (it may as well be one of the
 * library's own threads). Leaves the number loaded. */
static void scheduling_of_self(struct filter *f, long nr, unsigned self, int zero_is_self, unsigned host) {
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 7, (unsigned)nr);
    load_arg0(f);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 3, 0, self);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, zero_is_self ? 2 : 0, 0, 0);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 2, 0, host);
    ret(f, REFUSE_QUIETLY);
    ret(f, SECCOMP_RET_ALLOW);
    ret(f, DENY_EPERM);
    load_nr(f);
}

/* `nr`, whose argument `which` must be `which_value` (PRIO_PROCESS, IOPRIO_WHO_PROCESS) and whose
 * argument `who` must be 0 or this process: not another process, its group or its user (the
 * host, of the same user, among them). Another id is refused as in scheduling_of_self: reported when
 * it is the host's pid. Leaves the number loaded. */
static void only_own_process(struct filter *f, long nr, unsigned which, unsigned which_value, unsigned who, unsigned self,
                             unsigned host) {
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 9, (unsigned)nr);
    load_arg_low(f, which);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, which_value);
    load_arg_low(f, who);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 3, 0, 0);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 2, 0, self);
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 2, 0, host);
    ret(f, REFUSE_QUIETLY);
    ret(f, SECCOMP_RET_ALLOW);
    ret(f, DENY_EPERM);
    load_nr(f);
}

/* `nr` refused when its second argument is one of `values`. Leaves the number loaded. */
static void refuse_arg1(struct filter *f, long nr, const unsigned *values, unsigned count) {
    emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, (unsigned char)(count + 3), (unsigned)nr);
    load_arg1(f);
    for (unsigned i = 0; i < count; i++) emit(f, BPF_JMP | BPF_JEQ | BPF_K, (unsigned char)(count - i), 0, values[i]);
    ret(f, SECCOMP_RET_ALLOW);
    ret(f, DENY_EPERM);
    load_nr(f);
}

static int install_filter(unsigned grants, pid_t parent) {
    unsigned self = (unsigned)getpid(), host = (unsigned)(parent > 0 ? parent : getppid());
    struct filter f = { .n = 0 };
    /* Another architecture's calling convention (int 0x80 on x86-64) would bypass the numbers below. */
    emit(&f, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, RUNNER_AUDIT_ARCH);
    ret(&f, DENY_ENOSYS);
    load_nr(&f);
#ifdef __x86_64__
    emit(&f, BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x40000000u);  /* the x32 ABI */
    ret(&f, DENY_ENOSYS);
#endif
    /* Without the network: no socket but those the host hands over, which come connected. A
     * sendto naming an address is refused (a datagram to a socket path of the machine); sendmsg's
     * address is in memory a filter cannot read, but no socket the library can have takes one:
     * socket() is refused and socketpair() makes connected stream pairs only (a connected stream
     * socket answers EISCONN to an address). Checked before the calls allowed at once below. */
    if (!(grants & AH_GRANT_NETWORK)) {
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, (unsigned)SYS_sendto);
        load_arg_low(&f, 4);
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, 0);
        load_arg_high(&f, 4);
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
        ret(&f, SECCOMP_RET_ALLOW);
        ret(&f, DENY_EPERM);
        load_nr(&f);
    }
    /* The calls a runner makes per batch, none of which the rules below refuse: allowed at once,
     * so that the filter costs them a few instructions, not a walk through every rule. */
    static const long hot[] = {
        SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_futex, SYS_poll, SYS_ppoll, SYS_recvfrom, SYS_sendto,
        SYS_recvmsg, SYS_sendmsg, SYS_mmap, SYS_munmap, SYS_madvise, SYS_rt_sigprocmask, SYS_close, SYS_gettid,
    };
    const unsigned hot_count = sizeof hot / sizeof hot[0];
    for (unsigned i = 0; i < hot_count; i++) emit(&f, BPF_JMP | BPF_JEQ | BPF_K, (unsigned char)(hot_count - i), 0, (unsigned)hot[i]);
    emit(&f, BPF_JMP | BPF_JA, 0, 0, 1);
    ret(&f, SECCOMP_RET_ALLOW);
    /* Reading or writing another process's memory or registers (the host's among them). */
    static const long inspect[] = {
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
#ifdef SYS_kcmp
        SYS_kcmp,
#endif
#ifdef SYS_pidfd_getfd
        SYS_pidfd_getfd,
#endif
    };
    for (size_t i = 0; i < sizeof inspect / sizeof inspect[0]; i++) refuse(&f, inspect[i], DENY_EPERM);
    /* Signals: by a bare thread id (which may be one of the host's threads) or through a pidfd
     * (which /proc/<host> would give) never; by process id only to itself (tgkill: to its own
     * threads). A descriptor's owner would have the kernel signal a process of the library's
     * choosing (F_SETOWN, F_SETOWN_EX) with a signal of its choosing (F_SETSIG): refused. */
    refuse(&f, SYS_tkill, DENY_EPERM);
#ifdef SYS_pidfd_send_signal
    refuse(&f, SYS_pidfd_send_signal, DENY_EPERM);
#endif
#ifdef SYS_pidfd_open
    refuse(&f, SYS_pidfd_open, DENY_EPERM);
#endif
    only_at_self(&f, SYS_kill, self, 0);
    only_at_self(&f, SYS_tgkill, self, 0);
    only_at_self(&f, SYS_rt_sigqueueinfo, self, 0);
    only_at_self(&f, SYS_rt_tgsigqueueinfo, self, 0);
    /* Resource limits of another process (the host's RLIMIT_FSIZE: SIGXFSZ at its next write). */
    only_at_self(&f, SYS_prlimit64, self, 1);
    static const unsigned owner_commands[] = { F_SETOWN, F_SETOWN_EX, F_SETSIG };
    refuse_arg1(&f, SYS_fcntl, owner_commands, 3);
    /* Typing into a terminal (the runner has none: its own session; a descriptor of one might
     * still be passed along). */
    static const unsigned terminal_requests[] = { TIOCSTI, TIOCLINUX };
    refuse_arg1(&f, SYS_ioctl, terminal_requests, 2);
    /* No new processes: threads only (clone with CLONE_THREAD). */
    static const long processes[] = {
#ifdef SYS_fork
        SYS_fork,
#endif
#ifdef SYS_vfork
        SYS_vfork,
#endif
        SYS_execve,
#ifdef SYS_execveat
        SYS_execveat,
#endif
    };
    for (size_t i = 0; i < sizeof processes / sizeof processes[0]; i++) refuse(&f, processes[i], DENY_EPERM);
    /* Sockets: only those the host passes, unless the library is granted the network. Not a
     * socket of any family (a unix socket reaches the user's D-Bus session, ssh-agent, a rootless
     * Docker, X11), nor a name, a listener or a connection for one it has; a socket pair of the
     * stream kinds only (connected, and deaf to addresses). */
    if (!(grants & AH_GRANT_NETWORK)) {
        /* A unix socket is refused without a report: the C library probes the name-service
         * cache's socket on its own (getpwuid…), and a library's Swift runtime with it. */
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 5, (unsigned)SYS_socket);
        load_arg0(&f);
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, AF_UNIX);
        ret(&f, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
        ret(&f, DENY_EPERM);
        load_nr(&f);
        static const long addressing[] = { SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4 };
        for (size_t i = 0; i < sizeof addressing / sizeof addressing[0]; i++) refuse(&f, addressing[i], DENY_EPERM);
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, (unsigned)SYS_socketpair);
        load_arg1(&f);
        emit(&f, BPF_ALU | BPF_AND | BPF_K, 0, 0, 0xf);  /* the type without SOCK_CLOEXEC, SOCK_NONBLOCK */
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, SOCK_STREAM);
        emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, SOCK_SEQPACKET);
        ret(&f, SECCOMP_RET_ALLOW);
        ret(&f, DENY_EPERM);
        load_nr(&f);
    }
    /* Scheduling of another process: the host's priority, CPUs, scheduling class or I/O class
     * (an ordinary user may lower those of its own processes, the host among them). Its own: 0 or
     * its pid (a thread id it cannot tell from the host's is refused). */
    only_own_process(&f, SYS_setpriority, 0, 0 /* PRIO_PROCESS */, 1, self, host);
    only_own_process(&f, SYS_ioprio_set, 0, 1 /* IOPRIO_WHO_PROCESS */, 1, self, host);
    scheduling_of_self(&f, SYS_sched_setaffinity, self, 1, host);
    scheduling_of_self(&f, SYS_sched_setscheduler, self, 1, host);
    scheduling_of_self(&f, SYS_sched_setparam, self, 1, host);
#ifdef SYS_sched_setattr
    scheduling_of_self(&f, SYS_sched_setattr, self, 1, host);
#endif
    /* The parent-death signal the runner set (SIGKILL when the host dies) stays: a library that
     * cleared it would outlive a host killed with SIGKILL. */
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, (unsigned)SYS_prctl);
    load_arg0(&f);
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, PR_SET_PDEATHSIG);
    ret(&f, DENY_EPERM);
    load_nr(&f);
    /* New namespaces (an unprivileged user namespace would hand out capabilities again). clone3
     * passes its flags in memory, which a filter cannot read: it answers ENOSYS, and the C
     * library falls back to clone, whose flags are checked. */
    static const long namespaces[] = { SYS_unshare, SYS_setns };
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++) refuse(&f, namespaces[i], DENY_EPERM);
#ifdef SYS_clone3
    refuse(&f, SYS_clone3, DENY_ENOSYS);
#endif
    emit(&f, BPF_JMP | BPF_JEQ | BPF_K, 0, 5, (unsigned)SYS_clone);
    load_arg0(&f);
    emit(&f, BPF_JMP | BPF_JSET | BPF_K, 2, 0,
         CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP);
    emit(&f, BPF_JMP | BPF_JSET | BPF_K, 0, 1, CLONE_THREAD);
    ret(&f, SECCOMP_RET_ALLOW);
    ret(&f, DENY_EPERM);
    /* Kernel-wide facilities no integration needs; most also need a capability the runner no
     * longer has, the rest (eBPF, perf events, io_uring, memfd, keyrings, userfaultfd) are refused
     * here. */
    static const long system_wide[] = {
        SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_memfd_create,
#ifdef SYS_io_uring_setup
        SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
        SYS_keyctl, SYS_add_key, SYS_request_key,
        SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_swapon, SYS_swapoff, SYS_reboot,
        SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_acct,
        SYS_settimeofday, SYS_clock_settime, SYS_clock_adjtime, SYS_adjtimex, SYS_sethostname,
        SYS_setdomainname, SYS_quotactl, SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_syslog,
        SYS_vhangup,
#ifdef SYS_kexec_file_load
        SYS_kexec_file_load,
#endif
#ifdef SYS_fsopen
        SYS_fsopen, SYS_fsmount, SYS_move_mount, SYS_open_tree,
#endif
#ifdef __x86_64__
        SYS_iopl, SYS_ioperm,
#endif
    };
    load_nr(&f);
    for (size_t i = 0; i < sizeof system_wide / sizeof system_wide[0]; i++) refuse(&f, system_wide[i], DENY_EPERM);
    ret(&f, SECCOMP_RET_ALLOW);
    if (f.n >= FILTER_MAX) return 0;
    struct sock_fprog program = { (unsigned short)f.n, f.code };
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0;
}
#else
static int install_filter(unsigned grants, pid_t parent) { (void)grants; (void)parent; return 0; }
#endif

/* ---- what the filter refused, for the host --------------------------------------------- */

/* One bit per system-call number the filter refused, in the page shared with the host (it
 * reports each once, with the library's key). NULL when the host gave no page. */
static volatile uint64_t *refused_bits;

/* SIGSYS from the filter: note the call, and make it fail with the errno the filter carries (a
 * refused call looks to the library like any other error). */
static void refused(int signal, siginfo_t *info, void *context) {
    (void)signal;
    unsigned nr = (unsigned)info->si_syscall;
    if (refused_bits && nr < AH_REFUSED_BITS) __atomic_fetch_or(&refused_bits[nr / 64], 1ull << (nr % 64), __ATOMIC_RELAXED);
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RAX] = -(long long)info->si_errno;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = (unsigned long long)(-(long long)info->si_errno);
#else
    (void)uc;
#endif
}

static int watch_refusals(int report_fd) {
    if (report_fd >= 0) {
        void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, report_fd, 0);
        if (page != MAP_FAILED) refused_bits = (volatile uint64_t *)((char *)page + AH_REFUSED_OFFSET);
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = refused;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGSYS, &action, NULL) == 0;
}

int ah_runner_join_cgroup(const char *dir, char *err, size_t cap) {
    char path[4096], pid[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    int n = snprintf(pid, sizeof pid, "%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid, (size_t)n) != n) {
        if (err && cap) snprintf(err, cap, "cannot join the cgroup %s: %s", dir, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Root's runner becomes `uid`/`gid` with no supplementary groups: dropping capabilities alone
 * leaves uid 0, which still owns root's files (writes them, reads /etc/shadow where the mode lets
 * its owner). The bounding set goes first, while CAP_SETPCAP is still there; the kernel empties
 * the permitted and effective sets when every uid leaves 0. Checked afterwards: a runner that is
 * still root in any way stops. */
static int become_user(uid_t uid, gid_t gid, char *err, size_t cap) {
    for (int c = 0; c < 64; c++) {
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0) break;
        (void)prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    }
    if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
        if (err && cap) snprintf(err, cap, "cannot become uid %u gid %u (the user runners of a root host run as): %s",
                                 (unsigned)uid, (unsigned)gid, strerror(errno));
        return -1;
    }
    uid_t r, e, s;
    gid_t rg, eg, sg;
    if (getresuid(&r, &e, &s) != 0 || getresgid(&rg, &eg, &sg) != 0 || r != uid || e != uid || s != uid || rg != gid
        || eg != gid || sg != gid || getgroups(0, NULL) != 0 || (uid != 0 && setuid(0) == 0)) {
        if (err && cap) snprintf(err, cap, "still privileged after becoming uid %u gid %u", (unsigned)uid, (unsigned)gid);
        return -1;
    }
    return 0;
}

int64_t ah_runner_sandbox(const struct ah_jail_options *o, char *err, size_t cap) {
    int64_t applied = 0;
    if (close_above(o->keep_max)) applied |= AH_SANDBOX_FDS_CLOSED;
    if (o->run_as_uid >= 0 && o->run_as_gid >= 0 && geteuid() == 0) {
        if (become_user((uid_t)o->run_as_uid, (gid_t)o->run_as_gid, err, cap) != 0) return -1;
        applied |= AH_SANDBOX_UNPRIVILEGED_USER;
    }
    /* After the change of user, which clears it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0) applied |= AH_SANDBOX_PDEATHSIG;
    if (o->parent_pid > 0 && getppid() != o->parent_pid) {
        if (err && cap) snprintf(err, cap, "the host (pid %d) is gone", o->parent_pid);
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) applied |= AH_SANDBOX_NO_NEW_PRIVS;
    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &none) == 0) applied |= AH_SANDBOX_NO_CORE;
    if (o->memory_limit > 0) {
        struct rlimit limit = { (rlim_t)o->memory_limit, (rlim_t)o->memory_limit };
        if (setrlimit(RLIMIT_AS, &limit) == 0) applied |= AH_SANDBOX_MEMORY_LIMIT;
    }
    int limits = 1;
    if (o->max_open_files > 0) {
        struct rlimit files = { (rlim_t)o->max_open_files, (rlim_t)o->max_open_files };
        limits &= setrlimit(RLIMIT_NOFILE, &files) == 0;
    }
    if (o->max_file_bytes > 0) {
        struct rlimit size = { (rlim_t)o->max_file_bytes, (rlim_t)o->max_file_bytes };
        limits &= setrlimit(RLIMIT_FSIZE, &size) == 0;
        /* Past the limit a write fails with EFBIG instead of killing the process. */
        signal(SIGXFSZ, SIG_IGN);
    }
    if (limits && (o->max_open_files > 0 || o->max_file_bytes > 0)) applied |= AH_SANDBOX_FILE_LIMITS;
    /* No controlling terminal: the host starts it in a session of its own; a runner started
     * otherwise makes one (it fails only for a process group leader). */
    if (getsid(0) != getpid()) (void)setsid();
    if (getsid(0) == getpid()) applied |= AH_SANDBOX_OWN_SESSION;
    if (drop_capabilities()) applied |= AH_SANDBOX_NO_CAPABILITIES;
    if (watch_refusals(o->report_fd)) applied |= AH_SANDBOX_REPORTS_REFUSALS;
    /* Needs no_new_privs (or CAP_SYS_ADMIN, gone by now). */
    if ((applied & AH_SANDBOX_NO_NEW_PRIVS) && install_filter(o->grants, o->parent_pid)) applied |= AH_SANDBOX_SYSCALL_FILTER;
    return applied;
}

/* ---- the file system and network: Landlock ---------------------------------------------- */

#include <linux/landlock.h>
#include <sys/stat.h>

/* Rights of later Landlock ABIs than this system's header may know. */
#define AH_LL_FS_REFER (1ULL << 13)
#define AH_LL_FS_TRUNCATE (1ULL << 14)
#define AH_LL_FS_IOCTL_DEV (1ULL << 15)
#define AH_LL_NET_BIND_TCP (1ULL << 0)
#define AH_LL_NET_CONNECT_TCP (1ULL << 1)
#define AH_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define AH_LL_SCOPE_SIGNAL (1ULL << 1)
#define AH_LL_RULE_PATH_BENEATH 1

/* The ruleset attribute of ABI 6 (the kernel takes a larger struct whose extra fields are 0). */
struct ah_ruleset_attr { uint64_t handled_access_fs, handled_access_net, scoped; };
struct ah_path_beneath { uint64_t allowed_access; int32_t parent_fd; } __attribute__((packed));

int ah_runner_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
#else
    return 0;
#endif
}

#define FILE_RIGHTS (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE \
                     | AH_LL_FS_TRUNCATE | AH_LL_FS_IOCTL_DEV)

/* A rule on the file or directory `fd` refers to (a file gets only the rights a file can have). */
static int add_fd(int ruleset, int fd, uint64_t rights, uint64_t handled) {
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= FILE_RIGHTS;
    struct ah_path_beneath rule = { rights & handled, fd };
    return syscall(SYS_landlock_add_rule, ruleset, AH_LL_RULE_PATH_BENEATH, &rule, 0) == 0;
}

static int add_path(int ruleset, const char *path, uint64_t rights, uint64_t handled) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return 0;  /* a path that does not exist here grants nothing */
    int added = add_fd(ruleset, fd, rights, handled);
    close(fd);
    return added;
}

int ah_runner_landlock(const char *const *read_paths, size_t read_count, const char *const *write_paths, size_t write_count,
                       const int *read_fds, size_t read_fd_count, const int *write_fds, size_t write_fd_count,
                       uint32_t grants, char *err, size_t cap) {
#ifdef SYS_landlock_create_ruleset
    int abi = ah_runner_landlock_abi();
    if (abi <= 0) return 0;
    uint64_t fs = (1ULL << 13) - 1;  /* ABI 1: execute … make_sym */
    if (abi >= 2) fs |= AH_LL_FS_REFER;
    if (abi >= 3) fs |= AH_LL_FS_TRUNCATE;
    if (abi >= 5) fs |= AH_LL_FS_IOCTL_DEV;
    struct ah_ruleset_attr attr = { fs, 0, 0 };
    /* Handled with no rule: every TCP bind and connect refused (sockets are refused by the
     * filter as well; this holds for a socket the library was given). */
    if (abi >= 4 && !(grants & AH_GRANT_NETWORK)) attr.handled_access_net = AH_LL_NET_BIND_TCP | AH_LL_NET_CONNECT_TCP;
    /* No signal to a process outside this domain (the host, its threads), by any path (kill,
     * tgkill, a descriptor owner), and no abstract unix socket of another domain. */
    if (abi >= 6) attr.scoped = AH_LL_SCOPE_SIGNAL | AH_LL_SCOPE_ABSTRACT_UNIX_SOCKET;
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) {
        if (err && cap) snprintf(err, cap, "landlock_create_ruleset (ABI %d): %s", abi, strerror(errno));
        return -1;
    }
    uint64_t read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    for (size_t i = 0; i < read_count; i++) add_path(ruleset, read_paths[i], read, fs);
    for (size_t i = 0; i < write_count; i++) add_path(ruleset, write_paths[i], fs, fs);
    for (size_t i = 0; i < read_fd_count; i++) add_fd(ruleset, read_fds[i], read, fs);
    for (size_t i = 0; i < write_fd_count; i++) add_fd(ruleset, write_fds[i], fs, fs);
    long rc = syscall(SYS_landlock_restrict_self, ruleset, 0);
    close(ruleset);
    if (rc != 0) {
        if (err && cap) snprintf(err, cap, "landlock_restrict_self (ABI %d): %s", abi, strerror(errno));
        return -1;
    }
    return abi;
#else
    (void)read_paths; (void)read_count; (void)write_paths; (void)write_count; (void)read_fds; (void)read_fd_count;
    (void)write_fds; (void)write_fd_count; (void)grants; (void)err; (void)cap;
    return 0;
#endif
}
