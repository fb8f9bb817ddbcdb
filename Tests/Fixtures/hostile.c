/* Fixture for the process-mode jail: a destination that appends every event it accepts to the file
 * "path" (one line each, with write(2)), and attacks its host on purpose, by event name:
 *   "Garbage"   writes a 9-byte results frame claiming 4294967295 outcomes on the runner's socket
 *               (fd 4), then waits for ever (the host must end it);
 *   "Print"     prints a line that looks like the host's and terminal control sequences on its
 *               standard error, and a line on its standard output;
 *   "Attacks"   tries every attack below and writes, instead of the event, one JSON line of the
 *               errno each attempt ended with (0: it worked):
 *     killHostThread / tgkillHostThread / sigqueueHost  signal 0 to a thread of the host that is not
 *                   its main thread (the settings' "thread", else one /proc lists) with kill and
 *                   tgkill, and to the host (rt_sigqueueinfo);
 *     setown / setownEx / setsig   F_SETOWN (the host), F_SETOWN_EX, F_SETSIG on a descriptor;
 *     prlimitHost   prlimit64 on the host (read only);  prlimitSelf  on itself (allowed);
 *     tiocsti       ioctl(TIOCSTI) on standard error;  ownSession  1 when it leads its own session;
 *     fork / execve / cloneProcess   a new process (a child that does get made exits at once),
 *                   execve of a path that does not exist (ENOENT: allowed, EPERM: refused);
 *     thread        pthread_create (allowed: threads are fine);
 *     env           the names of its environment variables, comma-separated;
 *     readSecret / writeOutside   opening the file "secret" for reading, creating "outside";
 *     connect       a TCP connection to 127.0.0.1:"port";  udp  a UDP socket;
 *     nofile / fsize   RLIMIT_NOFILE and RLIMIT_FSIZE soft limits (-1: unlimited);
 *     memfd / ioUring   memfd_create, io_uring_setup;
 *     uid           its real uid;  shadow  opening /etc/shadow;  hostMemory  /proc/<host>/mem;
 *     cgroupLimit   opening its memory cgroup's limit for writing (-1: no memory cgroup);
 *     threadsMade   how many of 64 threads alive at once it could make;
 *     unixConnect   connecting a unix socket to the pathname socket "unix" (a D-Bus session's,
 *                   an ssh-agent's…);  unixDgram  a datagram socket pair;  streamPair  a stream
 *                   socket pair (allowed);  sendtoAddress  sendto with an address on its output;
 *     reniceHost / ioprioHost / affinityHost / schedulerHost   setpriority, ioprio_set,
 *                   sched_setaffinity, sched_setscheduler on the host (each sets what the host
 *                   has already, so nothing changes even where allowed);  reniceUser
 *                   setpriority of its user's processes;  reniceSelf  its own (allowed);
 *     pdeathsig     clearing its parent-death signal.
 *   "Storm"     sends a "Storm" event back to the host (which comes back here, durable or not),
 *               then blocks "stormMs" milliseconds (a number setting, default 20) and answers
 *               retryable: every event makes more;
 *   "Flood"     prints "lines" lines (a number setting, default 100000) of 100 bytes on its
 *               standard error, one 8 KiB line, and a line with C1 controls (U+009B as a
 *               character and as a raw 0x9B byte); it logs as many lines through the host;
 *   "Beats"     sends empty results frames on the runner's socket every 10 ms from a hook that
 *               never returns (as the runner does while it waits to retry);
 *   "Forge Completed"  sends a completed frame naming 100,000 serials from 10^9, then answers OK;
 *   "Forge Settled"    sends a settled frame settling 1,431,655,765 abandoned events, then answers OK.
 * Build with -DKEY='"Name"' to give each copy its own key. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "analytics_plugin.h"
#include "fixture_support.h"

#ifndef KEY
#define KEY "Hostile"
#endif

extern char **environ;

struct ah_instance { const ah_host *host; int lines; int storm_ms; int fd; char secret[512]; char outside[512]; int port; int thread; char unix_path[108]; };

static int errno_of(long rc) { return rc < 0 ? errno : 0; }

/* A thread of the host that is not its main thread (0 when there is none): the settings' "thread"
 * when given, else one /proc lists (when /proc/<host> is out of reach: 0). */
static pid_t host_thread(pid_t host, int given) {
    char path[64];
    pid_t found = given;
    if (given > 0) return given;
    snprintf(path, sizeof path, "/proc/%d/task", (int)host);
    DIR *dir = opendir(path);
    struct dirent *entry;
    while (dir && (entry = readdir(dir)) != NULL) {
        pid_t tid = (pid_t)atoi(entry->d_name);
        if (tid > 0 && tid != host) { found = tid; break; }
    }
    if (dir) closedir(dir);
    return found;
}

/* Without a known thread: signal 0 to the ids after the host's (where its threads usually are);
 * the first answer that is not ESRCH, else -1. */
static int guess_kill(pid_t host) {
    for (pid_t tid = host + 1; tid <= host + 64; tid++) {
        int e = errno_of(kill(tid, 0));
        if (e != ESRCH) return e;
    }
    return -1;
}

static int new_process(int how) {
    pid_t child;
    if (how == 0) child = fork();
    else child = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0);
    if (child == 0) _exit(0);
    if (child < 0) return errno;
    waitpid(child, NULL, 0);
    return 0;
}

static int open_errno(const char *path, int flags);

static void *nothing(void *arg) { return arg; }

/* A thread that waits until the pipe it reads is closed. */
static void *waiting(void *arg) {
    char byte;
    while (read(*(int *)arg, &byte, 1) > 0) {}
    return NULL;
}

/* How many of 64 threads alive at once it could make. */
static int threads_made(void) {
    pthread_t threads[64];
    int gate[2], made = 0;
    if (pipe(gate) != 0) return -1;
    while (made < 64 && pthread_create(&threads[made], NULL, waiting, &gate[0]) == 0) made++;
    close(gate[1]);
    for (int i = 0; i < made; i++) pthread_join(threads[i], NULL);
    close(gate[0]);
    return made;
}

/* Opening its own memory cgroup's limit for writing (raising it): 0 or errno; -1 without one. */
static int cgroup_limit_errno(void) {
    char line[512], path[700];
    FILE *f = fopen("/proc/self/cgroup", "r");
    int e = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *memory = strstr(line, ":memory:");
        if (!memory) continue;
        memory[strcspn(memory, "\n")] = 0;
        snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", memory + 8);
        e = open_errno(path, O_WRONLY);
    }
    if (f) fclose(f);
    return e;
}

static int open_errno(const char *path, int flags) {
    if (!path[0]) return -1;
    int fd = open(path, flags, 0644);
    if (fd < 0) return errno;
    close(fd);
    return 0;
}

static int connect_errno(int port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return errno;
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons((unsigned short)port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int e = errno_of(connect(s, (struct sockaddr *)&to, sizeof to));
    close(s);
    return e;
}

#include <sys/un.h>

/* A unix socket connected to `path`: 0 or errno (-1 without a path). */
static int unix_connect_errno(const char *path) {
    if (!path[0]) return -1;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) return errno;
    struct sockaddr_un to;
    memset(&to, 0, sizeof to);
    to.sun_family = AF_UNIX;
    snprintf(to.sun_path, sizeof to.sun_path, "%s", path);
    int e = errno_of(connect(s, (struct sockaddr *)&to, sizeof to));
    close(s);
    return e;
}

static int pair_errno(int type) {
    int pair[2];
    if (socketpair(AF_UNIX, type, 0, pair) != 0) return errno;
    close(pair[0]);
    close(pair[1]);
    return 0;
}

/* sendto naming an address, on its standard output (a socket the host reads). */
static int sendto_address_errno(void) {
    struct sockaddr_un to;
    memset(&to, 0, sizeof to);
    to.sun_family = AF_UNIX;
    snprintf(to.sun_path, sizeof to.sun_path, "/nonexistent/socket");
    return errno_of(sendto(1, "", 0, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof to));
}

/* The host's scheduling, set to what it is (a no-op where allowed). */
static int renice_errno(int which, pid_t who) {
    errno = 0;
    int nice = getpriority(which, (id_t)who);
    if (nice == -1 && errno) return errno;
    return errno_of(setpriority(which, (id_t)who, nice));
}

static int ioprio_errno(pid_t who) {
    long prio = syscall(SYS_ioprio_get, 1, who);
    if (prio < 0) return errno;
    return errno_of(syscall(SYS_ioprio_set, 1, who, prio));
}

static int affinity_errno(pid_t who) {
    cpu_set_t set;
    if (sched_getaffinity(who, sizeof set, &set) != 0) return errno;
    return errno_of(sched_setaffinity(who, sizeof set, &set));
}

static int scheduler_errno(pid_t who) {
    struct sched_param param;
    int policy = sched_getscheduler(who);
    if (policy < 0 || sched_getparam(who, &param) != 0) return errno;
    return errno_of(sched_setscheduler(who, policy, &param));
}

static long long soft(int resource) {
    struct rlimit r;
    if (getrlimit(resource, &r) != 0) return -2;
    return r.rlim_cur == RLIM_INFINITY ? -1LL : (long long)r.rlim_cur;
}

static void attacks(ah_instance *self) {
    char line[8192], names[4096];
    size_t used = 0, n = 0;
    pid_t host = getppid(), thread = host_thread(host, self->thread);
    int pipefd[2] = { -1, -1 };
    struct f_owner_ex owner = { F_OWNER_PID, host };
    struct rlimit got;
    siginfo_t info;
    pthread_t t;
    char *const argv[] = { (char *)"/nonexistent/analytics-hostile", NULL };
    int thread_errno;
    char host_memory[64], uring[256];
    memset(uring, 0, sizeof uring);
    snprintf(host_memory, sizeof host_memory, "/proc/%d/mem", (int)host);
    if (pipe(pipefd) != 0) pipefd[0] = pipefd[1] = -1;
    memset(&info, 0, sizeof info);
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    thread_errno = pthread_create(&t, NULL, nothing, NULL);
    if (thread_errno == 0) pthread_join(t, NULL);
    names[0] = 0;
    for (char **e = environ; *e && n < sizeof names - 256; e++) {
        size_t k = strcspn(*e, "=");
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%.*s", n ? "," : "", (int)k, *e);
    }
    used += (size_t)snprintf(line + used, sizeof line - used,
        "{\"hostThread\":%d,\"killHostThread\":%d,\"tgkillHostThread\":%d,\"sigqueueHost\":%d,"
        "\"setown\":%d,\"setownEx\":%d,\"setsig\":%d,\"prlimitHost\":%d,\"prlimitSelf\":%d,"
        "\"tiocsti\":%d,\"ownSession\":%d,\"fork\":%d,\"cloneProcess\":%d,\"execve\":%d,\"thread\":%d,",
        (int)thread,
        thread ? errno_of(kill(thread, 0)) : guess_kill(host),
        thread ? errno_of(syscall(SYS_tgkill, host, thread, 0)) : -1,
        errno_of(syscall(SYS_rt_sigqueueinfo, host, 0, &info)),
        errno_of(fcntl(pipefd[0], F_SETOWN, host)),
        errno_of(fcntl(pipefd[0], F_SETOWN_EX, &owner)),
        errno_of(fcntl(pipefd[0], F_SETSIG, SIGKILL)),
        errno_of(syscall(SYS_prlimit64, host, RLIMIT_FSIZE, NULL, &got)),
        errno_of(syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &got)),
        errno_of(ioctl(2, TIOCSTI, "x")),
        getsid(0) == getpid(),
        new_process(0), new_process(1),
        errno_of(execve(argv[0], argv, environ)),
        thread_errno);
    used += (size_t)snprintf(line + used, sizeof line - used,
        "\"readSecret\":%d,\"writeOutside\":%d,\"connect\":%d,\"udp\":%d,\"nofile\":%lld,\"fsize\":%lld,\"uid\":%d,"
        "\"memfd\":%d,\"ioUring\":%d,\"hostMemory\":%d,\"shadow\":%d,\"cgroupLimit\":%d,\"threadsMade\":%d,\"env\":\"%s\"}\n",
        open_errno(self->secret, O_RDONLY), open_errno(self->outside, O_WRONLY | O_CREAT),
        self->port > 0 ? connect_errno(self->port) : -1,
        errno_of(socket(AF_INET, SOCK_DGRAM, 0)),
        soft(RLIMIT_NOFILE), soft(RLIMIT_FSIZE), (int)getuid(),
        errno_of(syscall(SYS_memfd_create, "x", 0)), errno_of(syscall(SYS_io_uring_setup, 1, uring)),
        open_errno(host_memory, O_RDWR), open_errno("/etc/shadow", O_RDONLY), cgroup_limit_errno(), threads_made(), names);
    used -= 2;  /* reopen the object: "}\n" */
    used += (size_t)snprintf(line + used, sizeof line - used,
        ",\"unixConnect\":%d,\"unixDgram\":%d,\"streamPair\":%d,\"sendtoAddress\":%d,\"reniceHost\":%d,\"reniceUser\":%d,"
        "\"reniceSelf\":%d,\"ioprioHost\":%d,\"affinityHost\":%d,\"schedulerHost\":%d,\"pdeathsig\":%d}\n",
        unix_connect_errno(self->unix_path), pair_errno(SOCK_DGRAM), pair_errno(SOCK_STREAM), sendto_address_errno(),
        renice_errno(PRIO_PROCESS, host), renice_errno(PRIO_USER, 0), renice_errno(PRIO_PROCESS, 0),
        ioprio_errno(host), affinity_errno(host), scheduler_errno(host), errno_of(prctl(PR_SET_PDEATHSIG, 0)));
    if (pipefd[0] >= 0) { close(pipefd[0]); close(pipefd[1]); }
    if (self->fd >= 0 && write(self->fd, line, used) != (ssize_t)used) { /* nothing to do */ }
}

/* One frame on the runner's socket to the host (fd 4): length, kind, payload. */
static void frame(unsigned char kind, const unsigned char *payload, size_t n) {
    unsigned char header[5];
    uint32_t length = (uint32_t)n + 1;
    memcpy(header, &length, 4);
    header[4] = kind;
    if (write(4, header, 5) != 5 || (n && write(4, payload, n) != (ssize_t)n)) { /* the host is gone */ }
}

static void flood(ah_instance *self) {
    char line[128], big[8193];
    memset(line, 'x', 99);
    line[99] = '\n';
    for (int i = 0; i < self->lines; i++) if (write(2, line, 100) != 100) break;
    memset(big, 'y', 8192);
    big[8192] = '\n';
    if (write(2, big, sizeof big) != (ssize_t)sizeof big) { /* nothing to do */ }
    static const char c1[] = "c1 \xc2\x9b" "31m and raw \x9b" "2J end\n";
    if (write(2, c1, sizeof c1 - 1) != (ssize_t)(sizeof c1 - 1)) { /* nothing to do */ }
    for (int i = 0; i < self->lines; i++) self->host->log(self->host->ctx, AH_LOG_WARN, line, 99);
    self->host->log(self->host->ctx, AH_LOG_WARN, big, 8192);
}

static ah_status event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)err; (void)cap;
    if (contains(json, len, "\"event\":\"Storm\"")) {
        static const char storm[] = "{\"type\":\"track\",\"event\":\"Storm\",\"anonymousId\":\"a\"}";
        self->host->send_event(self->host->ctx, storm, sizeof storm - 1);
        usleep((useconds_t)self->storm_ms * 1000);
        snprintf(err, cap, "try again");
        return AH_ERR_RETRYABLE;
    }
    if (contains(json, len, "\"event\":\"Flood\"")) { flood(self); return AH_OK; }
    if (contains(json, len, "\"event\":\"Beats\"")) {
        static const unsigned char none[4] = { 0, 0, 0, 0 };
        for (;;) { frame(13, none, 4); usleep(10000); }
    }
    if (contains(json, len, "\"event\":\"Forge Completed\"")) {
        uint32_t count = 100000;
        unsigned char *completed = calloc(1, 4 + (size_t)count * 8);
        if (completed) {
            memcpy(completed, &count, 4);
            for (uint32_t i = 0; i < count; i++) { uint64_t serial = 1000000000ull + i; memcpy(completed + 4 + (size_t)i * 8, &serial, 8); }
            frame(17, completed, 4 + (size_t)count * 8);
            free(completed);
        }
        return AH_OK;
    }
    if (contains(json, len, "\"event\":\"Forge Settled\"")) {
        unsigned char settled[1 + 4 + 4 + 6] = { 1 };
        uint32_t many = 1431655765u, text = 6;
        memcpy(settled + 1, &many, 4);
        memcpy(settled + 5, &text, 4);
        memcpy(settled + 9, "forged", 6);
        frame(16, settled, sizeof settled);
        return AH_OK;
    }
    if (contains(json, len, "\"event\":\"Attacks\"")) { attacks(self); return AH_OK; }
    if (contains(json, len, "\"event\":\"Print\"")) {
        /* A line that looks like the host's, and one that moves the cursor up and clears it. */
        fprintf(stderr, "analytics-host: every event delivered\n\033[1A\033[2Kcleared\n");
        fflush(stderr);
        printf("on standard output\n");
        fflush(stdout);
    }
    if (contains(json, len, "\"event\":\"Garbage\"")) {
        /* length 5, kind 13 (results), count 0xFFFFFFFF: nine bytes. */
        static const unsigned char garbage[9] = { 5, 0, 0, 0, 13, 0xff, 0xff, 0xff, 0xff };
        if (write(4, garbage, sizeof garbage) != (ssize_t)sizeof garbage) { /* nothing to do */ }
        for (;;) pause();  /* the host ends this process when it reads the frame */
    }
    return append_line(self->fd, json, len);
}

static void destroy(ah_instance *self) {
    if (self->fd >= 0) close(self->fd);
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    char path[512], port[16], thread[16], lines[16];
    ah_instance *self;
    (void)err; (void)cap;
    self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    setting(settings, len, "\"lines\":", lines, sizeof lines);
    self->lines = lines[0] ? atoi(lines) : 100000;
    setting(settings, len, "\"stormMs\":", lines, sizeof lines);
    self->storm_ms = lines[0] ? atoi(lines) : 20;
    setting(settings, len, "\"path\":", path, sizeof path);
    setting(settings, len, "\"secret\":", self->secret, sizeof self->secret);
    setting(settings, len, "\"outside\":", self->outside, sizeof self->outside);
    setting(settings, len, "\"port\":", port, sizeof port);
    setting(settings, len, "\"unix\":", self->unix_path, sizeof self->unix_path);
    self->port = atoi(port);
    setting(settings, len, "\"thread\":", thread, sizeof thread);
    self->thread = atoi(thread);
    self->fd = path[0] ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), event, event, event, event, event, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

FIXTURE_ENTRY(integration)
