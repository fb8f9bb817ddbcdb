/* runner_sandbox.h: the restrictions analytics-plugin-runner puts on itself before it opens a
 * library (docs/isolation.md says what they cover). Only what is listed here is restricted. */
#ifndef RUNNER_SANDBOX_H
#define RUNNER_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

/* Bits of the value ah_runner_sandbox returns: what was applied. */
#define AH_SANDBOX_FDS_CLOSED 0x1u
#define AH_SANDBOX_PDEATHSIG 0x2u
#define AH_SANDBOX_NO_NEW_PRIVS 0x4u
#define AH_SANDBOX_MEMORY_LIMIT 0x8u
#define AH_SANDBOX_NO_CORE 0x10u
#define AH_SANDBOX_NO_CAPABILITIES 0x20u
#define AH_SANDBOX_SYSCALL_FILTER 0x40u
#define AH_SANDBOX_FILE_LIMITS 0x80u
#define AH_SANDBOX_OWN_SESSION 0x100u
#define AH_SANDBOX_REPORTS_REFUSALS 0x200u
#define AH_SANDBOX_UNPRIVILEGED_USER 0x400u

/* Grants (the library's settings ask for them): what the jail leaves open. */
#define AH_GRANT_NETWORK 0x1u

/* Where, in the page shared with the host (fd `report_fd`), the filter's refusals are noted:
 * one bit per system-call number below AH_REFUSED_BITS, from byte AH_REFUSED_OFFSET. */
#define AH_REFUSED_OFFSET 4032
#define AH_REFUSED_BITS 512

struct ah_jail_options {
    int keep_max;              /* descriptors above this are closed */
    uint64_t memory_limit;     /* RLIMIT_AS in bytes, 0: none */
    int parent_pid;            /* the host: the runner fails when it is already gone */
    uint32_t grants;           /* AH_GRANT_* */
    int report_fd;             /* the shared page for refusals, -1: none */
    uint64_t max_open_files;   /* RLIMIT_NOFILE, 0: unchanged */
    uint64_t max_file_bytes;   /* RLIMIT_FSIZE, 0: unchanged */
    int64_t run_as_uid;        /* when started as root: become this uid (and run_as_gid, no groups); -1: stay */
    int64_t run_as_gid;
};

/* Closes every file descriptor above `keep_max` (0, 1, 2 and the protocol descriptors stay); when
 * it runs as root and `run_as_uid` is set, becomes that uid and `run_as_gid` for good (real,
 * effective, saved and file-system ids, no supplementary groups: root's access to files by their
 * owner and mode is gone, not only its capabilities) and fails when it cannot; asks
 * the kernel to SIGKILL this process when its parent dies (and fails if `parent_pid` is already
 * gone), sets PR_SET_NO_NEW_PRIVS (no set-uid / file-capability gain through exec), limits the
 * address space, open files and file size when asked, turns core dumps off, leads a session of
 * its own (no controlling terminal), empties every capability set, and installs a seccomp filter
 * that refuses with EPERM: ptrace and reading or writing other processes' memory; signals to any
 * process but itself, by bare thread id or through a pidfd; resource limits of another process;
 * descriptor owners and their signals (F_SETOWN, F_SETOWN_EX, F_SETSIG); typing into a terminal
 * (TIOCSTI, TIOCLINUX); new processes (fork, vfork, execve, execveat, clone without
 * CLONE_THREAD); unless AH_GRANT_NETWORK, a socket of any family, connect, bind, listen, accept,
 * sendto with an address and datagram socket pairs (the host's sockets come connected); the
 * scheduling of another process (setpriority, ioprio_set, sched_set*); clearing the
 * parent-death signal (prctl PR_SET_PDEATHSIG); new namespaces; and
 * kernel-wide facilities (eBPF, perf events, io_uring, memfd, keyrings, mounts, modules, clocks…).
 * A refused call raises SIGSYS, whose handler notes it in the shared page and makes it return
 * -EPERM. Returns the AH_SANDBOX_* bits applied, or -1 with a reason in `err` (NUL-terminated,
 * `cap` bytes) when the parent is gone. A step the kernel refuses is left out of the bits. */
int64_t ah_runner_sandbox(const struct ah_jail_options *options, char *err, size_t cap);

/* The Landlock ABI this kernel offers, 0 when none. */
int ah_runner_landlock_abi(void);

/* Confines this process with Landlock: it may read (and map for execution) beneath
 * `read_paths` and `read_fds` and read, write, create and remove beneath `write_paths` and
 * `write_fds`, nothing else of the file system; without AH_GRANT_NETWORK, no TCP bind or connect
 * (ABI 4); no signal to a process outside its domain and no abstract unix socket of another
 * domain (ABI 6). A path that does not exist grants nothing. The descriptors are files and
 * directories the host opened with its own rights and handed over (the library, the grants), so
 * a rule never depends on a path this process's user could reach; they stay open. Returns the ABI
 * applied, 0 when the kernel has no Landlock, -1 with a reason in `err`. Needs no_new_privs
 * (ah_runner_sandbox sets it). */
int ah_runner_landlock(const char *const *read_paths, size_t read_count, const char *const *write_paths, size_t write_count,
                       const int *read_fds, size_t read_fd_count, const int *write_fds, size_t write_fd_count,
                       uint32_t grants, char *err, size_t cap);

/* Moves this process into the cgroup directory `dir` (writes its pid to `dir`/cgroup.procs), so
 * that the cgroup's limit holds from before the library is opened. 0, or -1 with a reason in
 * `err`. */
int ah_runner_join_cgroup(const char *dir, char *err, size_t cap);

#endif
