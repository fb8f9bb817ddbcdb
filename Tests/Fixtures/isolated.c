/* Fixture for process isolation: a destination that appends every event it accepts to the file
 * "path" (one line each, written with write(2) so nothing is lost when it dies), and misbehaves on
 * purpose, by settings:
 *   "crash_in_create": true   abort() in create (a library that crashes on every start);
 *   event "Crash"             segfaults (a write through NULL) every time it sees it;
 *   event "Hang"              hangs for ever unless the file "marker" exists (it creates it
 *                             first), so it hangs once and succeeds after a restart;
 *   event "Flaky"             fails with AH_ERR_RETRYABLE the first time it is seen, then
 *                             succeeds (a retry must come before the events behind it);
 *   event "Allocate"          allocates and touches memory without bound; when malloc fails it
 *                             writes through the NULL it got (as unchecked code does);
 *   event "Probe"             writes what restricts its process instead of the event:
 *                             {"fds":"0=/dev/null 1=... ","nnp":1,"as":BYTES,...} (open
 *                             descriptors and their targets, PR_GET_NO_NEW_PRIVS, RLIMIT_AS (-1:
 *                             unlimited), the CapEff/CapPrm/CapBnd and Seccomp lines of
 *                             /proc/self/status, whether it leads a process group of its own, and
 *                             the errno (0: allowed) of: signal 0 to the host, to its own process
 *                             group and to itself; PTRACE_ATTACH to the host; reading the host's
 *                             memory, and opening /proc/<host>/mem; a new user namespace).
 * Build with -DKEY='"Name"' to give each copy its own key. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"
#include "fixture_support.h"

#ifndef KEY
#define KEY "Isolated"
#endif

struct ah_instance { int fd; int flaky_seen; char marker[512]; };

/* 0 when the call succeeded, else its errno. */
static int errno_of(int rc) { return rc < 0 ? errno : 0; }

/* Opens /proc/<host>/mem (and closes it): 0 or -1 with errno. */
static int open_host_memory(pid_t host) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)host);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
    return fd < 0 ? -1 : 0;
}

/* Appends ,"Name":"value" for the line "Name:\tvalue" of /proc/self/status. */
static void status_line(const char *name, char *line, size_t *used, size_t cap) {
    char text[256];
    size_t n = strlen(name);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    while (fgets(text, sizeof text, f)) {
        if (strncmp(text, name, n) != 0) continue;
        char *v = text + n;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        *used += (size_t)snprintf(line + *used, cap - *used, ",\"%.*s\":\"%s\"", (int)(n - 1), name, v);
        break;
    }
    fclose(f);
}

static void probe(ah_instance *self) {
    char line[8192], target[256], path[300];
    size_t used = 0;
    struct rlimit as;
    struct dirent *entry;
    DIR *dir = opendir("/proc/self/fd");
    used += (size_t)snprintf(line + used, sizeof line - used, "{\"fds\":\"");
    while (dir && (entry = readdir(dir)) != NULL && used < sizeof line - 600) {
        ssize_t n;
        if (entry->d_name[0] == '.' || atoi(entry->d_name) == dirfd(dir)) continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
        n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        used += (size_t)snprintf(line + used, sizeof line - used, "%s=%s ", entry->d_name, target);
    }
    if (dir) closedir(dir);
    getrlimit(RLIMIT_AS, &as);
    used += (size_t)snprintf(line + used, sizeof line - used, "\",\"nnp\":%d,\"as\":%lld", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
                             as.rlim_cur == RLIM_INFINITY ? -1LL : (long long)as.rlim_cur);
    status_line("CapEff:", line, &used, sizeof line);
    status_line("CapPrm:", line, &used, sizeof line);
    status_line("CapBnd:", line, &used, sizeof line);
    status_line("Seccomp:", line, &used, sizeof line);
    {
        pid_t host = getppid();
        char byte = 0, got = 0;
        struct iovec local = { &got, 1 }, remote = { &byte, 1 };  /* any address: the call is refused first */
        used += (size_t)snprintf(line + used, sizeof line - used,
                                 ",\"ownGroup\":%d,\"killHost\":%d,\"killGroup\":%d,\"killSelf\":%d,\"ptraceHost\":%d,"
                                 "\"readHost\":%d,\"userNamespace\":%d,\"openHostMemory\":%d",
                                 getpgid(0) == getpid() && getpgid(0) != getpgid(host),
                                 errno_of(kill(host, 0)), errno_of(kill(0, 0)), errno_of(kill(getpid(), 0)),
                                 errno_of((int)ptrace(PTRACE_ATTACH, host, NULL, NULL)),
                                 errno_of((int)process_vm_readv(host, &local, 1, &remote, 1, 0)),
                                 errno_of(unshare(CLONE_NEWUSER)), errno_of(open_host_memory(host)));
    }
    used += (size_t)snprintf(line + used, sizeof line - used, "}\n");
    if (self->fd >= 0 && write(self->fd, line, used) != (ssize_t)used) { /* nothing to do */ }
}

static ah_status event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    if (contains(json, len, "\"event\":\"Probe\"")) { probe(self); return AH_OK; }
    if (contains(json, len, "\"event\":\"Crash\"")) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
    if (contains(json, len, "\"event\":\"Hang\"") && access(self->marker, F_OK) != 0) {
        int m = open(self->marker, O_WRONLY | O_CREAT, 0644);
        if (m >= 0) close(m);
        for (;;) pause();
    }
    if (contains(json, len, "\"event\":\"Flaky\"") && self->flaky_seen++ == 0) {
        snprintf(err, cap, "not yet");
        return AH_ERR_RETRYABLE;
    }
    if (contains(json, len, "\"event\":\"Allocate\"")) {
        for (;;) {
            char *block = malloc(1 << 20);
            if (block == NULL) { volatile char *nowhere = NULL; *nowhere = 1; }
            else memset(block, 1, 1 << 20);
        }
    }
    return append_line(self->fd, json, len);
}

static void destroy(ah_instance *self) {
    if (self->fd >= 0) close(self->fd);
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    char path[512];
    ah_instance *self;
    (void)host; (void)err; (void)cap;
    if (contains(settings, len, "\"crash_in_create\":true")) abort();
    self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    setting(settings, len, "\"path\":", path, sizeof path);
    setting(settings, len, "\"marker\":", self->marker, sizeof self->marker);
    self->fd = path[0] ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), event, event, event, event, event, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

FIXTURE_ENTRY(integration)
