/* live_bundle.c: see live_bundle.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live_bundle.h"
#include "live_json.h"

int live_read_file(const char *path, size_t max, live_buf *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        int e = errno ? errno : EFBIG;
        if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) e = EISDIR;
        else if ((size_t)st.st_size > max) e = EFBIG;
        close(fd);
        errno = e;
        return -1;
    }
    out->len = 0;
    if (live_buf_reserve(out, (size_t)st.st_size + 1)) { close(fd); errno = ENOMEM; return -1; }
    for (;;) {
        if (live_buf_reserve(out, out->len + 4096 + 1)) { close(fd); errno = ENOMEM; return -1; }
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0) break;
        out->len += (size_t)n;
        if (out->len > max) { close(fd); errno = EFBIG; return -1; }
    }
    out->data[out->len] = 0;
    close(fd);
    return 0;
}

static int write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void sync_directory_of(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    int fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int live_write_file_atomically(const char *path, const char *data, size_t len, char *err,
                               size_t err_cap) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, err_cap, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        snprintf(err, err_cap, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, err_cap, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    sync_directory_of(path);
    return 0;
}

int64_t live_cached_version(const char *storage_dir) {
    char path[PATH_MAX];
    live_buf text = {0};
    struct stat st;
    snprintf(path, sizeof path, "%s/bundle.js", storage_dir);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    snprintf(path, sizeof path, "%s/bundle.version", storage_dir);
    if (live_read_file(path, 64, &text) != 0) return -1;
    char *end;
    long long v = strtoll(text.data, &end, 10);
    int ok = end != text.data && (*end == 0 || *end == '\n') && v >= 0;
    live_buf_free(&text);
    return ok ? (int64_t)v : -1;
}

typedef struct download_sink {
    int fd;
    size_t written, max;
    int too_large, failed;
} download_sink;

static ah_status sink_write(void *ctx, const char *bytes, size_t len) {
    download_sink *s = ctx;
    if (s->written + len > s->max) { s->too_large = 1; return AH_ERR_PERMANENT; }
    if (write_all(s->fd, bytes, len) != 0) { s->failed = errno; return AH_ERR_PERMANENT; }
    s->written += len;
    return AH_OK;
}

/* Whether `host` (`n` bytes) is this machine: localhost, 127.0.0.0/8 or [::1]. */
static int is_loopback_host(const char *host, size_t n) {
    if (n == 9 && strncasecmp(host, "localhost", 9) == 0) return 1;
    if (n == 5 && memcmp(host, "[::1]", 5) == 0) return 1;
    if (n < 7 || n > 15 || memcmp(host, "127.", 4) != 0) return 0;
    int dots = 0, digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (host[i] == '.') {
            if (!digits) return 0;
            dots++;
            digits = 0;
        } else if (host[i] >= '0' && host[i] <= '9') {
            if (++digits > 3) return 0;
        } else {
            return 0;
        }
    }
    return dots == 3 && digits > 0;
}

/* A bundle is code that will run in the process: it comes over https only (the host's HTTP
 * client checks the certificate), or over plain http from this machine (tests, a local server). */
int live_download_url_allowed(const char *url, char *err, size_t err_cap) {
    if (strncasecmp(url, "https://", 8) == 0 && url[8] && url[8] != '/') return 1;
    if (strncasecmp(url, "http://", 7) == 0) {
        const char *host = url + 7;
        size_t n = strcspn(host, "/?#");
        if (memchr(host, '@', n) == NULL) {
            size_t h = n;
            if (host[0] == '[') {
                const char *close = memchr(host, ']', n);
                h = close ? (size_t)(close - host) + 1 : n;
            } else {
                const char *colon = memchr(host, ':', n);
                if (colon) h = (size_t)(colon - host);
            }
            if (is_loopback_host(host, h)) return 1;
        }
        snprintf(err, err_cap, "plain http is refused for a bundle (code that runs in this process) except from this machine "
                 "(127.0.0.1, [::1], localhost): use an https URL");
        return 0;
    }
    snprintf(err, err_cap, "not an https URL");
    return 0;
}

int live_download(const ah_host_http *http, void *host_ctx, const char *url, uint32_t timeout_ms,
                  const char *storage_dir, size_t max, live_buf *out, char *err, size_t err_cap) {
    if (!live_download_url_allowed(url, err, err_cap)) return -1;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/bundle.js.download", storage_dir);
    download_sink sink = {.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), .max = max};
    if (sink.fd < 0) {
        snprintf(err, err_cap, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    ah_byte_sink bytes = {.ctx = &sink, .write = sink_write};
    int32_t status = 0;
    char reason[256] = "";
    ah_status rc = http->get(host_ctx, url, strlen(url), timeout_ms, &bytes, &status, reason, sizeof reason);
    int synced = fsync(sink.fd) == 0;
    close(sink.fd);
    if (sink.too_large) {
        snprintf(err, err_cap, "the bundle is larger than %zu bytes", max);
    } else if (sink.failed) {
        snprintf(err, err_cap, "cannot write %s: %s", tmp, strerror(sink.failed));
    } else if (rc != AH_OK) {
        snprintf(err, err_cap, "%s", reason[0] ? reason : "the download failed");
    } else if (status != 200) {
        snprintf(err, err_cap, "HTTP status %d", (int)status);
    } else if (!synced) {
        snprintf(err, err_cap, "cannot write %s: %s", tmp, strerror(errno));
    } else if (live_read_file(tmp, max, out) != 0) {
        snprintf(err, err_cap, "cannot read %s back: %s", tmp, strerror(errno));
    } else {
        return 0;
    }
    unlink(tmp);
    return -1;
}

int live_commit_download(const char *storage_dir, int64_t version, char *err, size_t err_cap) {
    char tmp[PATH_MAX], path[PATH_MAX], text[32];
    snprintf(tmp, sizeof tmp, "%s/bundle.js.download", storage_dir);
    snprintf(path, sizeof path, "%s/bundle.js", storage_dir);
    if (rename(tmp, path) != 0) {
        snprintf(err, err_cap, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    sync_directory_of(path);
    int n = snprintf(text, sizeof text, "%lld\n", (long long)version);
    snprintf(path, sizeof path, "%s/bundle.version", storage_dir);
    return live_write_file_atomically(path, text, (size_t)n, err, err_cap);
}

void live_discard_download(const char *storage_dir) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/bundle.js.download", storage_dir);
    unlink(tmp);
}
