#define _GNU_SOURCE
#include "runner_sandbox.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

int64_t ah_runner_sandbox(int keep_max, uint64_t memory_limit, int parent_pid, char *err, size_t cap) {
    int64_t applied = 0;
    if (close_above(keep_max)) applied |= AH_SANDBOX_FDS_CLOSED;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0) applied |= AH_SANDBOX_PDEATHSIG;
    if (parent_pid > 0 && getppid() != parent_pid) {
        if (err && cap) snprintf(err, cap, "the host (pid %d) is gone", parent_pid);
        return -1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) applied |= AH_SANDBOX_NO_NEW_PRIVS;
    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &none) == 0) applied |= AH_SANDBOX_NO_CORE;
    if (memory_limit > 0) {
        struct rlimit limit = { (rlim_t)memory_limit, (rlim_t)memory_limit };
        if (setrlimit(RLIMIT_AS, &limit) == 0) applied |= AH_SANDBOX_MEMORY_LIMIT;
    }
    return applied;
}
