/* Fixture: uses AH_EXT_SIGNALS. Settings {"out": "<file>", "held": true|false}.
 * create: subscribes (held or not) and emits one user-defined signal from C.
 * deliver: appends each signal's JSON text and a newline to <file>; release appends "released".
 * track hook, by event name: "ready" calls set_ready(id, 1); "today" emits a signal in today's
 * shape and one missing its target's component, and logs both statuses; "bad" emits an invalid signal and
 * logs the host's reason; "unsubscribe" unsubscribes; "config" logs the configuration text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance {
    const ah_host *host;
    const ah_host_signals *signals;
    uint64_t id;
    char out[512];
};

static int contains(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

static void append(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "a");
    if (!f) return;
    fwrite(text, 1, len, f);
    fputc('\n', f);
    fclose(f);
}

static void deliver(void *ctx, const char *json, size_t len) {
    append(((ah_instance *)ctx)->out, json, len);
}

static void release(void *ctx) {
    append(((ah_instance *)ctx)->out, "released", 8);
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    char reason[256], line[600];
    int n;
    (void)err; (void)cap;
    if (!self->signals) return AH_OK;
    if (contains(json, len, "\"event\":\"ready\"")) {
        n = snprintf(line, sizeof line, "set_ready=%d", (int)self->signals->set_ready(self->host->ctx, self->id, 1));
        self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    } else if (contains(json, len, "\"event\":\"bad\"")) {
        const char *bad = "{\"type\":\"navigation\",\"data\":{\"action\":\"sideways\",\"screen\":\"Home\"}}";
        ah_status status;
        reason[0] = 0;
        status = self->signals->emit(self->host->ctx, bad, strlen(bad), reason, sizeof reason);
        n = snprintf(line, sizeof line, "emit status=%d reason=%s", (int)status, reason);
        self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    } else if (contains(json, len, "\"event\":\"today\"")) {
        /* analytics-swift-live 3.x's interaction shape, then one without its component. */
        const char *today = "{\"type\":\"interaction\",\"data\":{\"target\":{\"component\":\"button\",\"title\":\"Buy\"}}}";
        const char *bad = "{\"type\":\"interaction\",\"data\":{\"target\":{\"title\":\"Buy\"}}}";
        ah_status good, refused;
        reason[0] = 0;
        good = self->signals->emit(self->host->ctx, today, strlen(today), NULL, 0);
        refused = self->signals->emit(self->host->ctx, bad, strlen(bad), reason, sizeof reason);
        n = snprintf(line, sizeof line, "today status=%d bad status=%d reason=%s", (int)good, (int)refused, reason);
        self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    } else if (contains(json, len, "\"event\":\"unsubscribe\"")) {
        int first = (int)self->signals->unsubscribe(self->host->ctx, self->id);
        int again = (int)self->signals->unsubscribe(self->host->ctx, self->id);
        n = snprintf(line, sizeof line, "unsubscribe=%d again=%d", first, again);
        self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    } else if (contains(json, len, "\"event\":\"config\"")) {
        char config[256];
        int64_t total = self->signals->configuration(self->host->ctx, config, sizeof config);
        n = snprintf(line, sizeof line, "config(%lld)=%s", (long long)total, config);
        self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    }
    return AH_OK;
}

/* "destroyed" last: the test checks that `release` (which reads self) came before it. */
static void destroy(ah_instance *self) { append(self->out, "destroyed", 9); free(self); }

static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self;
    const char *key = "\"out\":\"", *start = NULL, *end;
    size_t i, klen = strlen(key);
    ah_signal_subscriber sub;
    const char *hello = "{\"type\":\"userDefined\",\"data\":{\"from\":\"c\"}}";
    for (i = 0; i + klen <= len; i++)
        if (memcmp(s + i, key, klen) == 0) { start = s + i + klen; break; }
    if (!start) { snprintf(err, cap, "settings need \"out\""); return NULL; }
    end = memchr(start, '"', len - (size_t)(start - s));
    if (!end || (size_t)(end - start) >= sizeof self->out) { snprintf(err, cap, "bad \"out\""); return NULL; }
    self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    memcpy(self->out, start, (size_t)(end - start));
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) return self;
    self->signals = (const ah_host_signals *)host->get_extension(host->ctx, AH_EXT_SIGNALS);
    if (!self->signals) {
        append(self->out, "no-signals", 10);
        return self;
    }
    memset(&sub, 0, sizeof sub);
    sub.size = sizeof sub;
    sub.flags = contains(s, len, "\"held\":true") ? AH_SIGNALS_START_HELD : 0;
    sub.name = "probe";
    sub.ctx = self;
    sub.deliver = deliver;
    sub.release = release;
    if (self->signals->subscribe(host->ctx, &sub, &self->id, err, cap) != AH_OK) { free(self); return NULL; }
    if (self->signals->emit(host->ctx, hello, strlen(hello), err, cap) != AH_OK) { free(self); return NULL; }
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "SignalsProbe", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
