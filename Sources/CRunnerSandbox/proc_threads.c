/*
 * proc_threads.c: lets libdispatch in a jailed runner see its own worker threads.
 *
 * libdispatch checks the workers of its global concurrent queues (DispatchQueue.global(), the
 * Swift concurrency pool) about once a second by opening /proc/<tid>/stat for each, and traps
 * (SIGILL) when that open fails. Landlock lets the runner read /proc/self, its own /proc/<pid>,
 * but /proc/<tid> of a thread is not beneath it, and granting all of /proc would show the library
 * every process's command line. The same file is /proc/self/task/<tid>/stat, which is beneath
 * it. This `open` is the runner executable's, so the dynamic linker binds every library of the
 * runner (libdispatch, Foundation, the integration library) to it before libc's: it reads
 * /proc/<n>/stat as /proc/self/task/<n>/stat, which exists only when <n> is a thread of this
 * process (any other number stays refused: ENOENT). Every other path goes to the kernel as given.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* "/proc/<digits>/stat" → "/proc/self/task/<digits>/stat" in `out`; 0 when `path` is not one. */
static int task_stat_path(const char *path, char *out, size_t cap) {
    if (strncmp(path, "/proc/", 6) != 0) return 0;
    const char *p = path + 6, *digits = p;
    while (*p >= '0' && *p <= '9') p++;
    size_t n = (size_t)(p - digits);
    if (n == 0 || n > 10 || strcmp(p, "/stat") != 0) return 0;
    return snprintf(out, cap, "/proc/self/task/%.*s/stat", (int)n, digits) < (int)cap;
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list args;
        va_start(args, flags);
        mode = (mode_t)va_arg(args, int);
        va_end(args);
    }
    char task[64];
    if (task_stat_path(path, task, sizeof task)) path = task;
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
