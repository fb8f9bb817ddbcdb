/* Fixture: an integration that uploads through the host (ABI 1.3, AH_EXT_HTTP_REQUESTS).
 * Its settings say what to send when the host has started:
 *   {"url": "<http url>", "requests": N, "method": "PUT", "gzip": true, "doneDelayMs": D}
 * (D: each `done` waits that long after logging, as a slow callback would). Instead of "url":
 * "hostPort": "127.0.0.1:8080" and "path": "/x" make http://127.0.0.1:8080/x, a URL its settings
 * do not name (what the host's grants must refuse in process mode).
 * Request i (from 0) carries the body {"n":i} and the headers Content-Type and X-Request: i.
 * Every outcome is logged as one line, so the tests read what the library saw:
 *   "start i=<i> result=<status> id=<id> err=<reason>"
 *   "done id=<id> outcome=<status> status=<http> retry-after=<value> body=<body> err=<reason>"
 *   "destroy open=<requests started and not done>"
 *   "destroy while a done callback runs" (a host bug: destroy frees what the callback uses) */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance {
    const ah_host *host;
    const ah_host_http_requests *http;
    char url[512];
    char method[16];
    int requests;
    int gzip;
    int done_delay_ms;
    int open; /* started, not done: atomically updated (done runs on host threads) */
    int in_done; /* done callbacks running, atomically updated */
};

static void say(ah_instance *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void say(ah_instance *self, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    self->host->log(self->host->ctx, AH_LOG_INFO, line, strlen(line));
}

/* Copies the string member `name` of a flat JSON object into `out` (empty when absent). */
static void member(const char *json, size_t len, const char *name, char *out, size_t cap) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    out[0] = 0;
    const char *end = json + len;
    const char *at = NULL;
    size_t klen = strlen(key);
    for (const char *p = json; p + klen <= end; p++) if (memcmp(p, key, klen) == 0) { at = p + klen; break; }
    if (!at) return;
    if (*at == '"') {
        at++;
        size_t i = 0;
        while (at < end && *at != '"' && i + 1 < cap) out[i++] = *at++;
        out[i] = 0;
    } else {
        size_t i = 0;
        while (at < end && *at != ',' && *at != '}' && i + 1 < cap) out[i++] = *at++;
        out[i] = 0;
    }
}

static void on_done(void *user, uint64_t id, const ah_http_response *r) {
    ah_instance *self = (ah_instance *)user;
    char retry[64] = "", body[256] = "", error[256] = "";
    __atomic_add_fetch(&self->in_done, 1, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < r->header_count; i++) {
        if (r->headers[i].name_len == 11 && memcmp(r->headers[i].name, "retry-after", 11) == 0) {
            size_t n = r->headers[i].value_len < sizeof retry - 1 ? r->headers[i].value_len : sizeof retry - 1;
            memcpy(retry, r->headers[i].value, n);
            retry[n] = 0;
        }
    }
    size_t n = r->body_len < sizeof body - 1 ? r->body_len : sizeof body - 1;
    if (n) memcpy(body, r->body, n);
    body[n] = 0;
    n = r->error_len < sizeof error - 1 ? r->error_len : sizeof error - 1;
    if (n) memcpy(error, r->error, n);
    error[n] = 0;
    say(self, "done id=%llu outcome=%d status=%d retry-after=%s body=%s err=%s", (unsigned long long)id,
        (int)r->outcome, (int)r->status_code, retry, body, error);
    if (self->done_delay_ms > 0) usleep((useconds_t)self->done_delay_ms * 1000);
    __atomic_sub_fetch(&self->open, 1, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&self->in_done, 1, __ATOMIC_SEQ_CST);
}

static void upload(ah_instance *self) {
    for (int i = 0; i < self->requests; i++) {
        char body[64], index[16], err[256] = "";
        snprintf(body, sizeof body, "{\"n\":%d}", i);
        snprintf(index, sizeof index, "%d", i);
        ah_http_header headers[2] = {
            {"Content-Type", 12, "application/json", 16},
            {"X-Request", 9, index, strlen(index)},
        };
        ah_http_request request;
        memset(&request, 0, sizeof request);
        request.size = sizeof request;
        request.flags = self->gzip ? AH_HTTP_GZIP : 0;
        request.method = self->method;
        request.method_len = strlen(self->method);
        request.url = self->url;
        request.url_len = strlen(self->url);
        request.headers = headers;
        request.header_count = 2;
        request.body = body;
        request.body_len = strlen(body);
        request.timeout_ms = 3000;
        uint64_t id = 0;
        __atomic_add_fetch(&self->open, 1, __ATOMIC_SEQ_CST);
        ah_status st = self->http->start(self->host->ctx, &request, on_done, self, &id, err, sizeof err);
        if (st != AH_OK) __atomic_sub_fetch(&self->open, 1, __ATOMIC_SEQ_CST);
        say(self, "start i=%d result=%d id=%llu err=%s", i, (int)st, (unsigned long long)id, err);
    }
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    if (phase == AH_LIFECYCLE_STARTED) upload(self);
    return AH_OK;
}

static void destroy(ah_instance *self) {
    if (__atomic_load_n(&self->in_done, __ATOMIC_SEQ_CST) > 0) say(self, "destroy while a done callback runs");
    say(self, "destroy open=%d", __atomic_load_n(&self->open, __ATOMIC_SEQ_CST));
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) { snprintf(err, cap, "needs ABI 1.2 or newer"); return NULL; }
    const ah_host_http_requests *http = (const ah_host_http_requests *)host->get_extension(host->ctx, AH_EXT_HTTP_REQUESTS);
    if (!http) { snprintf(err, cap, "the host offers no %s", AH_EXT_HTTP_REQUESTS); return NULL; }
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    self->http = http;
    char number[32];
    member(settings, len, "url", self->url, sizeof self->url);
    char host_port[128], path[256];
    member(settings, len, "hostPort", host_port, sizeof host_port);
    member(settings, len, "path", path, sizeof path);
    if (host_port[0]) snprintf(self->url, sizeof self->url, "http://%s%s", host_port, path);
    member(settings, len, "method", self->method, sizeof self->method);
    if (!self->method[0]) strcpy(self->method, "POST");
    member(settings, len, "requests", number, sizeof number);
    self->requests = number[0] ? atoi(number) : 1;
    member(settings, len, "gzip", number, sizeof number);
    self->gzip = strcmp(number, "true") == 0;
    member(settings, len, "doneDelayMs", number, sizeof number);
    self->done_delay_ms = number[0] ? atoi(number) : 0;
    say(self, "max_in_flight=%u", (unsigned)http->max_in_flight);
    return self;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, lifecycle,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Uploader", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
