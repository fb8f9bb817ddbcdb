/* runner_sandbox.h: the restrictions analytics-plugin-runner puts on itself before it opens a
 * library (see docs/isolation.md). Only what is listed here is restricted. */
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

/* Closes every file descriptor above `keep_max` (0, 1, 2 and the protocol pipes stay), asks the
 * kernel to SIGKILL this process when its parent dies (and fails if `parent_pid` is already
 * gone), sets PR_SET_NO_NEW_PRIVS (no set-uid / file-capability gain through exec), limits the
 * address space to `memory_limit` bytes when non-zero (RLIMIT_AS), turns core dumps off, empties
 * every capability set (a runner of a root host keeps uid 0 but no capability), and installs a
 * seccomp filter that refuses, with EPERM: ptrace and reading or writing other processes' memory;
 * signals to `parent_pid`, to process groups, by thread id or through a pidfd; new namespaces;
 * and kernel-wide facilities (eBPF, perf events, keyrings, mounts, modules, clocks…).
 * Returns the AH_SANDBOX_* bits applied, or -1 with a reason in `err` (NUL-terminated, `cap`
 * bytes) when the parent is gone. A step the kernel refuses is left out of the bits. */
int64_t ah_runner_sandbox(int keep_max, uint64_t memory_limit, int parent_pid, char *err, size_t cap);

/* Moves this process into the cgroup directory `dir` (writes its pid to `dir`/cgroup.procs), so
 * that the cgroup's memory limit holds from before the library is opened. 0, or -1 with a reason
 * in `err`. */
int ah_runner_join_cgroup(const char *dir, char *err, size_t cap);

#endif
