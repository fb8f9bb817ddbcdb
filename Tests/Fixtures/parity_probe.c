/* Fixture for the mode-parity suite: the same library, run in-process and in its runner, must
 * behave the same. It logs every call through the host's logger (so no file is needed in a jailed
 * runner), one line each: "create", "started", "update <kind> <keys>", "<hook> <event name>",
 * "reset", "flush", "stopping", "destroy".
 * Its settings (the object under its key; with -DWHOLE the whole document's "integrations.<KEY>"
 * is not where they are, so WHOLE builds read top-level "parity") may ask it to send events with
 * send_event: {"send": {"started": n, "stopping": n, "flush": n}}; each phase logs
 * "sent <phase> <ok> of <n>".
 * Events named "Fail" fail permanently; "Retry" fails retryable the first time each messageId is
 * seen; "Hang" blocks until the process ends.
 * -DROLE=bits: the AH_EXT_ROLE bits (default: a destination). -DKEY="...": its key.
 * -DNO_GROUP: no group hook (the host then skips group events for it). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "Parity"
#endif

struct ah_instance {
    const ah_host *host;
    int send_started, send_stopping, send_flush;
    char retried[64][40];
    int retried_count;
};

static void logf_(ah_instance *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void logf_(ah_instance *self, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
}

/* The string value of "name": in json (first occurrence), copied into out; "" when absent. */
static void string_field(const char *json, size_t len, const char *name, char *out, size_t cap) {
    char pattern[64];
    int k = snprintf(pattern, sizeof pattern, "\"%s\":\"", name);
    out[0] = 0;
    for (size_t i = 0; i + (size_t)k <= len; i++) {
        if (memcmp(json + i, pattern, (size_t)k) == 0) {
            size_t j = i + (size_t)k, o = 0;
            while (j < len && json[j] != '"' && o + 1 < cap) out[o++] = json[j++];
            out[o] = 0;
            return;
        }
    }
}

static int int_field(const char *json, size_t len, const char *name) {
    char pattern[64];
    int k = snprintf(pattern, sizeof pattern, "\"%s\":", name);
    for (size_t i = 0; i + (size_t)k < len; i++)
        if (memcmp(json + i, pattern, (size_t)k) == 0) return atoi(json + i + k);
    return 0;
}

static void read_settings(ah_instance *self, const char *json, size_t len) {
    self->send_started = int_field(json, len, "started");
    self->send_stopping = int_field(json, len, "stopping");
    self->send_flush = int_field(json, len, "flushing");
}

static void send_some(ah_instance *self, const char *phase, int n) {
    if (n <= 0) return;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        char event[160];
        int len = snprintf(event, sizeof event,
                           "{\"type\":\"track\",\"event\":\"From %s\",\"properties\":{\"i\":%d}}", phase, i);
        if (self->host->send_event(self->host->ctx, event, (size_t)len) == AH_OK) ok++;
    }
    logf_(self, "sent %s %d of %d", phase, ok, n);
}

static ah_status on_event(ah_instance *self, const char *hook, const char *json, size_t len, char *err, size_t cap) {
    char name[96], id[40];
    string_field(json, len, hook[0] == 't' ? "event" : "name", name, sizeof name);
    logf_(self, "%s %s", hook, name);
    if (strcmp(name, "Fail") == 0) {
        snprintf(err, cap, "refused %s", name);
        return AH_ERR_PERMANENT;
    }
    if (strcmp(name, "Retry") == 0) {
        string_field(json, len, "messageId", id, sizeof id);
        for (int i = 0; i < self->retried_count; i++)
            if (strcmp(self->retried[i], id) == 0) return AH_OK;
        if (self->retried_count < 64) strcpy(self->retried[self->retried_count++], id);
        snprintf(err, cap, "try %s again", name);
        return AH_ERR_RETRYABLE;
    }
    if (strcmp(name, "Hang") == 0) {
        for (;;) { struct timespec t = {1, 0}; nanosleep(&t, NULL); }
    }
    return AH_OK;
}

static ah_status identify(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return on_event(s, "identify", j, l, e, c); }
static ah_status track(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return on_event(s, "track", j, l, e, c); }
static ah_status screen(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return on_event(s, "screen", j, l, e, c); }
#ifndef NO_GROUP
static ah_status group(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return on_event(s, "group", j, l, e, c); }
#endif
static ah_status alias(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return on_event(s, "alias", j, l, e, c); }

static ah_status reset(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    logf_(self, "reset");
    return AH_OK;
}

static ah_status flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    logf_(self, "flush");
    send_some(self, "flushing", self->send_flush);
    self->send_flush = 0;
    return AH_OK;
}

static ah_status update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    (void)err; (void)cap;
    char mark[64];
    string_field(settings, len, "mark", mark, sizeof mark);
    logf_(self, "update %s mark=%s", kind == AH_UPDATE_INITIAL ? "initial" : "refresh", mark);
    read_settings(self, settings, len);
    return AH_OK;
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    if (phase == AH_LIFECYCLE_STARTED) {
        logf_(self, "started");
        send_some(self, "started", self->send_started);
    } else if (phase == AH_LIFECYCLE_STOPPING) {
        logf_(self, "stopping");
        send_some(self, "stopping", self->send_stopping);
    }
    return AH_OK;
}

static void destroy(ah_instance *self) {
    logf_(self, "destroy");
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)err; (void)cap;
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    read_settings(self, settings, len);
    logf_(self, "create");
    return self;
}

#ifdef NO_GROUP
#define GROUP_HOOK NULL
#else
#define GROUP_HOOK group
#endif
static const ah_hooks hooks = { sizeof(ah_hooks), identify, track, screen, GROUP_HOOK, alias, reset, flush, update, destroy, lifecycle };

#ifdef ROLE
static const ah_role role = { sizeof(ah_role), ROLE };
static const void *get_extension(const char *id) { return strcmp(id, AH_EXT_ROLE) == 0 ? &role : NULL; }
#define GET_EXTENSION get_extension
#else
#define GET_EXTENSION NULL
#endif

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, GET_EXTENSION,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
