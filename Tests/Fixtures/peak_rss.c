/* Test fixture: runs a command and reports its peak resident set size.
 *
 * usage: peak_rss STDOUT_FILE STDERR_FILE COMMAND [ARG...]
 * Forks (a real fork of this small process, so the measurement does not inherit the memory of
 * whoever started us, as it would through vfork/posix_spawn) and execs COMMAND with its output
 * sent to the two files, waits, and prints "<exit status> <peak RSS in KiB>" on stdout. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: peak_rss STDOUT STDERR COMMAND [ARG...]\n"); return 2; }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || err < 0) _exit(127);
        dup2(in, 0); dup2(out, 1); dup2(err, 2);
        execv(argv[3], argv + 3);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {}
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("%d %ld\n", code, usage.ru_maxrss);
    return 0;
}
