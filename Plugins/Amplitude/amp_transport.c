/* The two ways a request leaves: through the host's HTTP client (ABI 1.3, AH_EXT_HTTP_REQUESTS:
 * https, the host's proxy settings and timeouts; the library carries no TLS), or, with a host
 * that does not offer it, a POST over plain HTTP/1.1 on a socket of its own (one connection per
 * request, `Connection: close`) for `apiHost` URLs such as a local proxy. Without the host's
 * client the library refuses https settings when it is created, so it never accepts an event it
 * cannot send. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "amplitude.h"

static int split_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap,
                     const char **path) {
    const char *p, *slash, *colon;
    size_t n;
    if (strncmp(url, "http://", 7) != 0) return -1;
    p = url + 7;
    slash = strchr(p, '/');
    *path = slash ? slash : "/";
    n = slash ? (size_t)(slash - p) : strlen(p);
    colon = memchr(p, ':', n);
    if (colon) {
        size_t h = (size_t)(colon - p), q = n - h - 1;
        if (h == 0 || h >= host_cap || q == 0 || q >= port_cap) return -1;
        memcpy(host, p, h); host[h] = 0;
        memcpy(port, colon + 1, q); port[q] = 0;
    } else {
        if (n == 0 || n >= host_cap) return -1;
        memcpy(host, p, n); host[n] = 0;
        snprintf(port, port_cap, "80");
    }
    return 0;
}

static int send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) { if (errno == EINTR) continue; return -1; }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads the whole answer (the server closes the connection) into a growing buffer. */
static char *read_all(int fd, size_t *len) {
    size_t cap = 8192;
    char *buf = (char *)malloc(cap);
    *len = 0;
    if (!buf) return NULL;
    for (;;) {
        ssize_t n;
        if (*len + 1 == cap || *len + 4096 > cap) {
            char *bigger;
            if (cap >= ((size_t)16 << 20)) break; /* an answer this large is not Amplitude's */
            if (!(bigger = (char *)realloc(buf, cap * 2))) break;
            buf = bigger;
            cap *= 2;
        }
        n = recv(fd, buf + *len, cap - *len - 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        *len += (size_t)n;
    }
    buf[*len] = 0;
    return buf;
}

int amp_post_socket(void *unused, const char *url, const char *body, size_t len, int timeout_ms,
                    amp_answer *answer, char *err, size_t cap) {
    char host[256], port[16], head[1024];
    const char *path, *line, *end, *start;
    struct addrinfo hints, *addrs = NULL, *a;
    struct timeval tv;
    int fd = -1, rc, n;
    size_t got;
    char *reply;

    (void)unused;
    answer->status = 0;
    answer->retry_after = -1;
    answer->body[0] = 0;
    if (split_url(url, host, sizeof host, port, sizeof port, &path) != 0) {
        snprintf(err, cap, "Amplitude: cannot send to %s: only http:// URLs until the host offers HTTP POST", url);
        return -1;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if ((rc = getaddrinfo(host, port, &hints, &addrs)) != 0) {
        snprintf(err, cap, "Amplitude: cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    for (a = addrs; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(addrs);
    if (fd < 0) {
        snprintf(err, cap, "Amplitude: cannot connect to %s:%s: %s", host, port, strerror(errno));
        return -1;
    }
    n = snprintf(head, sizeof head,
                 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nAccept: */*\r\n"
                 "User-Agent: " AMP_LIBRARY "-amplitude/" AMP_VERSION "\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n", path, host, port, len);
    if (n < 0 || (size_t)n >= sizeof head || send_all(fd, head, (size_t)n) != 0 || send_all(fd, body, len) != 0) {
        snprintf(err, cap, "Amplitude: sending to %s failed: %s", url, strerror(errno));
        close(fd);
        return -1;
    }
    reply = read_all(fd, &got);
    close(fd);
    if (!reply || sscanf(reply, "HTTP/1.%*d %d", &answer->status) != 1) {
        snprintf(err, cap, "Amplitude: no HTTP answer from %s within %d ms", url, timeout_ms);
        free(reply);
        answer->status = 0;
        return -1;
    }
    /* Headers: only Retry-After matters. */
    line = strstr(reply, "\r\n");
    end = strstr(reply, "\r\n\r\n");
    while (line && end && line < end) {
        line += 2;
        if (strncasecmp(line, "Retry-After:", 12) == 0) answer->retry_after = strtod(line + 12, NULL);
        line = strstr(line, "\r\n");
    }
    start = end ? end + 4 : reply + got;
    snprintf(answer->body, sizeof answer->body, "%s", start);
    free(reply);
    return 0;
}

/* One request through the host: the waiter and the host's callback share it; whoever comes
 * second frees it (the waiter gives up after the timeout plus a margin, the host always calls). */
typedef struct host_call {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, abandoned;
    int ok;
    amp_answer answer;
    char error[256];
} host_call;

static void host_call_free(host_call *c) {
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void host_done(void *user, uint64_t request_id, const ah_http_response *r) {
    host_call *c = (host_call *)user;
    int abandoned;
    size_t i;
    (void)request_id;
    pthread_mutex_lock(&c->lock);
    c->ok = r->outcome == AH_OK;
    c->answer.status = r->status_code;
    c->answer.retry_after = -1;
    for (i = 0; r->headers && i < r->header_count; i++) {
        const ah_http_header *h = &r->headers[i];
        if (h->name_len == 11 && memcmp(h->name, "retry-after", 11) == 0 && h->value) {
            char text[32];
            size_t n = h->value_len < sizeof text - 1 ? h->value_len : sizeof text - 1;
            memcpy(text, h->value, n);
            text[n] = 0;
            c->answer.retry_after = strtod(text, NULL);
        }
    }
    {
        size_t n = r->body && r->body_len < sizeof c->answer.body - 1 ? r->body_len : r->body ? sizeof c->answer.body - 1 : 0;
        if (n) memcpy(c->answer.body, r->body, n);
        c->answer.body[n] = 0;
    }
    {
        size_t n = r->error && r->error_len < sizeof c->error - 1 ? r->error_len : r->error ? sizeof c->error - 1 : 0;
        if (n) memcpy(c->error, r->error, n);
        c->error[n] = 0;
    }
    c->done = 1;
    abandoned = c->abandoned;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    if (abandoned) host_call_free(c);
}

int amp_post_host(void *ctx, const char *url, const char *body, size_t len, int timeout_ms,
                  amp_answer *answer, char *err, size_t cap) {
    const amp_host_http *http = (const amp_host_http *)ctx;
    static const char content_type[] = "application/json";
    ah_http_header header;
    ah_http_request request;
    host_call *c = (host_call *)calloc(1, sizeof *c);
    struct timespec deadline;
    char reason[256];
    int rc = 0, answered;
    answer->status = 0;
    answer->retry_after = -1;
    answer->body[0] = 0;
    if (!c) { snprintf(err, cap, "Amplitude: out of memory"); return -1; }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    header.name = "Content-Type"; header.name_len = 12;
    header.value = content_type; header.value_len = sizeof content_type - 1;
    memset(&request, 0, sizeof request);
    request.size = sizeof request;
    request.method = "POST"; request.method_len = 4;
    request.url = url; request.url_len = strlen(url);
    request.headers = &header; request.header_count = 1;
    request.body = body; request.body_len = len;
    request.timeout_ms = (uint32_t)timeout_ms;
    reason[0] = 0;
    if (http->table->start(http->host_ctx, &request, host_done, c, NULL, reason, sizeof reason) != AH_OK) {
        snprintf(err, cap, "Amplitude: the host did not start the request to %s: %s", url, reason);
        host_call_free(c);
        return -1;
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000 + 10;
    pthread_mutex_lock(&c->lock);
    while (!c->done && rc == 0) rc = pthread_cond_timedwait(&c->cond, &c->lock, &deadline);
    answered = c->done;
    if (!answered) c->abandoned = 1;
    pthread_mutex_unlock(&c->lock);
    if (!answered) {
        snprintf(err, cap, "Amplitude: no answer from the host's HTTP client for %s within %d ms", url, timeout_ms);
        return -1; /* the host's callback frees it */
    }
    if (!c->ok) {
        snprintf(err, cap, "Amplitude: POST %s failed: %s", url, c->error[0] ? c->error : "no answer");
        host_call_free(c);
        return -1;
    }
    *answer = c->answer;
    host_call_free(c);
    return 0;
}
