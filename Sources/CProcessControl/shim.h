/* The host's calls that Swift cannot make itself (prctl is variadic). */
#ifndef AH_PROCESS_CONTROL_H
#define AH_PROCESS_CONTROL_H

#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Makes this process not dumpable: no core file, and its /proc files (mem, environ, fd…) are
 * owned by root, so another process of the same user (a library's runner) cannot open them. */
static inline int ah_process_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/* 1 when this process is dumpable, 0 when not, -1 on error. */
static inline int ah_process_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

/* Whether this kernel takes the runner's seccomp filter (1) or not (0): SECCOMP_GET_ACTION_AVAIL
 * for SECCOMP_RET_TRAP (Linux 4.14+); before it, whether seccomp is there at all. */
static inline int ah_process_seccomp_filter_available(void) {
#ifdef SYS_seccomp
    unsigned int trap = 0x00030000u; /* SECCOMP_RET_TRAP */
    if (syscall(SYS_seccomp, 2u /* SECCOMP_GET_ACTION_AVAIL */, 0u, &trap) == 0) return 1;
    if (errno == EINVAL) return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
    return 0;
#else
    return 0;
#endif
}

/* The Landlock ABI this kernel offers (0: none). */
static inline int ah_process_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, (void *)0, 0, 1u /* LANDLOCK_CREATE_RULESET_VERSION */);
    return abi > 0 ? (int)abi : 0;
#else
    return 0;
#endif
}

#endif
