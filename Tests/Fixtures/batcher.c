/* Fixture: a vendor-style integration that holds events and answers them when its upload is
 * acknowledged (ABI 1.3: AH_EXT_FINISH_LATER + AH_EXT_HTTP_REQUESTS).
 * track takes a completion token, keeps the event and answers AH_PENDING; once `batch` events are
 * held (or at flush) it POSTs them as a JSON array to `url`; the upload's answer completes every
 * token of it: 2xx AH_OK, 429/5xx or no answer AH_ERR_RETRYABLE, other statuses AH_ERR_PERMANENT.
 * At most the host's max_in_flight uploads run at once: past it events stay held, and the next
 * upload starts from the `done` of one that ended.
 * Settings: {"url": "...", "batch": N, "mode": "normal" | "never" | "twice" | "tokenless", "ack_ms": M,
 *            "timeout_ms": T}
 *   ack_ms     the upload's done callback takes M ms (on the host's thread) before it completes
 *   timeout_ms each upload's timeout (default 5000)
 *   never      holds events and never uploads or completes (the host's timeout must act)
 *   twice      completes every token twice (the second must be refused)
 *   tokenless  answers AH_PENDING without taking a token
 * It also offers AH_EXT_NOTICES ("notice kind=<kind> text=<text>") and, in create, logs what
 * AH_EXT_HOST_INFO says: "host=<name> <version> debug=<0|1> error=<0|1>".
 * Log lines: "held max=<most events held at once>", "complete again=<status>",
 *            "complete after destroy=<status>", "uploaded n=<events> status=<http>". */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#ifndef MAX_HELD
#define MAX_HELD 2048
#endif

typedef struct held {
    uint64_t token;
    char *json;
    size_t len;
} held;

typedef struct upload {
    struct ah_instance *self;
    size_t count;
    uint64_t tokens[MAX_HELD];
} upload;

struct ah_instance {
    const ah_host *host;
    const ah_host_http_requests *http;
    const ah_host_finish_later *later;
    char url[512];
    char mode[16];
    size_t batch;
    long ack_ms;
    pthread_mutex_t lock;
    held items[MAX_HELD];
    size_t count;
    size_t most;
    uint64_t last_token;
    uint32_t in_flight; /* uploads started and not done (under the lock) */
    int flush_wanted;   /* a flush found no room: the next `done` sends what is held */
    uint32_t timeout_ms; /* per upload ("timeout_ms", default 5000) */
};

static void say(ah_instance *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(ah_instance *self, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) self->host->log(self->host->ctx, AH_LOG_INFO, line, strlen(line));
}

static void member(const char *json, size_t len, const char *name, char *out, size_t cap) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    size_t klen = strlen(key);
    const char *end = json + len, *at = NULL;
    out[0] = 0;
    for (const char *p = json; p + klen <= end; p++) if (memcmp(p, key, klen) == 0) { at = p + klen; break; }
    if (!at) return;
    int quoted = *at == '"';
    if (quoted) at++;
    size_t i = 0;
    while (at < end && i + 1 < cap && (quoted ? *at != '"' : (*at != ',' && *at != '}'))) out[i++] = *at++;
    out[i] = 0;
}

static void finish(ah_instance *self, upload *u, ah_status status, const char *reason) {
    for (size_t i = 0; i < u->count; i++) {
        self->later->complete(self->host->ctx, u->tokens[i], status, reason, strlen(reason));
        if (strcmp(self->mode, "twice") == 0) {
            ah_status again = self->later->complete(self->host->ctx, u->tokens[i], AH_OK, NULL, 0);
            say(self, "complete again=%d", (int)again);
        }
    }
    free(u);
}

static void send_held(ah_instance *self);

/* An upload ended: room for the next one, if enough is held. */
static void upload_ended(ah_instance *self) {
    pthread_mutex_lock(&self->lock);
    self->in_flight--;
    if (self->count >= self->batch || self->flush_wanted) send_held(self);
    pthread_mutex_unlock(&self->lock);
}

static void on_done(void *user, uint64_t id, const ah_http_response *r) {
    upload *u = (upload *)user;
    ah_instance *self = u->self;
    (void)id;
    char reason[300];
    if (self->ack_ms > 0) {
        struct timespec pause = { self->ack_ms / 1000, (self->ack_ms % 1000) * 1000000L };
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
    }
    if (r->outcome == AH_OK && r->status_code >= 200 && r->status_code < 300) {
        say(self, "uploaded n=%zu status=%d", u->count, (int)r->status_code);
        finish(self, u, AH_OK, "");
    } else if (r->outcome != AH_OK || r->status_code == 429 || r->status_code >= 500) {
        snprintf(reason, sizeof reason, "upload answered %d %.*s", (int)r->status_code, (int)r->error_len, r->error ? r->error : "");
        say(self, "uploaded n=%zu status=%d", u->count, (int)r->status_code);
        finish(self, u, AH_ERR_RETRYABLE, reason);
    } else {
        snprintf(reason, sizeof reason, "vendor refused the batch with HTTP %d", (int)r->status_code);
        finish(self, u, AH_ERR_PERMANENT, reason);
    }
    upload_ended(self);
}

/* Sends what is held (called with the lock held). */
static void send_held(ah_instance *self) {
    if (self->count == 0 || strcmp(self->mode, "never") == 0) return;
    if (self->in_flight >= self->http->max_in_flight) return; /* the next `done` sends it */
    self->flush_wanted = 0;
    size_t size = 2;
    for (size_t i = 0; i < self->count; i++) size += self->items[i].len + 1;
    char *body = (char *)malloc(size);
    upload *u = (upload *)malloc(sizeof *u);
    if (!body || !u) { free(body); free(u); return; }
    size_t at = 0;
    body[at++] = '[';
    for (size_t i = 0; i < self->count; i++) {
        if (i) body[at++] = ',';
        memcpy(body + at, self->items[i].json, self->items[i].len);
        at += self->items[i].len;
        u->tokens[i] = self->items[i].token;
        free(self->items[i].json);
    }
    body[at++] = ']';
    u->self = self;
    u->count = self->count;
    self->count = 0;
    ah_http_header type = {"Content-Type", 12, "application/json", 16};
    ah_http_request request;
    memset(&request, 0, sizeof request);
    request.size = sizeof request;
    request.url = self->url;
    request.url_len = strlen(self->url);
    request.headers = &type;
    request.header_count = 1;
    request.body = body;
    request.body_len = at;
    request.timeout_ms = self->timeout_ms;
    char err[256] = "";
    self->in_flight++;
    if (self->http->start(self->host->ctx, &request, on_done, u, NULL, err, sizeof err) != AH_OK) {
        /* Not started (the host is stopping): answer its events retryable, the host calls again. */
        self->in_flight--;
        finish(self, u, AH_ERR_RETRYABLE, err);
    }
    free(body);
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    if (strcmp(self->mode, "tokenless") == 0) return AH_PENDING;
    uint64_t token = self->later->token(self->host->ctx);
    if (token == 0) { snprintf(err, cap, "no completion token inside track"); return AH_ERR_PERMANENT; }
    pthread_mutex_lock(&self->lock);
    if (self->count == MAX_HELD) {
        pthread_mutex_unlock(&self->lock);
        snprintf(err, cap, "holding %d events already", MAX_HELD);
        return AH_ERR_RETRYABLE;
    }
    held *h = &self->items[self->count++];
    h->token = token;
    h->json = (char *)malloc(len);
    if (h->json) memcpy(h->json, json, len);
    h->len = h->json ? len : 0;
    self->last_token = token;
    if (self->count > self->most) self->most = self->count;
    if (self->count >= self->batch) send_held(self);
    pthread_mutex_unlock(&self->lock);
    return AH_PENDING;
}

static ah_status flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    pthread_mutex_lock(&self->lock);
    self->flush_wanted = 1;
    send_held(self);
    pthread_mutex_unlock(&self->lock);
    return AH_OK;
}

static void destroy(ah_instance *self) {
    say(self, "held max=%zu", self->most);
    if (self->last_token) {
        ah_status late = self->later->complete(self->host->ctx, self->last_token, AH_OK, NULL, 0);
        say(self, "complete after destroy=%d", (int)late);
    }
    for (size_t i = 0; i < self->count; i++) free(self->items[i].json);
    pthread_mutex_destroy(&self->lock);
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) { snprintf(err, cap, "needs ABI 1.3"); return NULL; }
    const ah_host_http_requests *http = (const ah_host_http_requests *)host->get_extension(host->ctx, AH_EXT_HTTP_REQUESTS);
    const ah_host_finish_later *later = (const ah_host_finish_later *)host->get_extension(host->ctx, AH_EXT_FINISH_LATER);
    if (!http || !later) { snprintf(err, cap, "the host lacks %s or %s", AH_EXT_HTTP_REQUESTS, AH_EXT_FINISH_LATER); return NULL; }
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    self->http = http;
    self->later = later;
    pthread_mutex_init(&self->lock, NULL);
    char number[32];
    member(settings, len, "url", self->url, sizeof self->url);
    member(settings, len, "mode", self->mode, sizeof self->mode);
    member(settings, len, "timeout_ms", number, sizeof number);
    self->timeout_ms = number[0] && atoi(number) > 0 ? (uint32_t)atoi(number) : 5000;
    member(settings, len, "batch", number, sizeof number);
    self->batch = number[0] ? (size_t)atoi(number) : 10;
    member(settings, len, "ack_ms", number, sizeof number);
    self->ack_ms = number[0] ? atol(number) : 0;
    const ah_host_info *info = (const ah_host_info *)host->get_extension(host->ctx, AH_EXT_HOST_INFO);
    if (info) {
        say(self, "host=%s %s debug=%d error=%d", info->name, info->version, (int)info->log_enabled(host->ctx, AH_LOG_DEBUG),
            (int)info->log_enabled(host->ctx, AH_LOG_ERROR));
    }
    if (self->batch < 1 || self->batch > MAX_HELD) self->batch = 10;
    return self;
}

static void notice(ah_instance *self, int32_t kind, const char *text, size_t len) {
    say(self, "notice kind=%d text=%.*s", (int)kind, (int)len, text);
}

static const ah_notices notices = { sizeof(ah_notices), notice };

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_NOTICES) == 0 ? &notices : NULL;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, flush, NULL, destroy, NULL,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Batcher", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
