#define _POSIX_C_SOURCE 200809L
/* Fixture: an ABI 1.2 library that adds a timeline plugin (AH_EXT_TIMELINE) and uses the client
 * (AH_EXT_CLIENT) and HTTP (AH_EXT_HTTP) capabilities. Everything it sees goes to the host log,
 * which is what the tests read.
 *
 * Compile-time knobs (-D):
 *   KEY="Timeliner"        the library key
 *   ROLE=flags             AH_ROLE_* bits (default AH_ROLE_WHOLE_SETTINGS)
 *   STAGE=type             AH_PLUGIN_* stage of its plugin (default AH_PLUGIN_BEFORE)
 *   SCOPE="Dest"           a destination key for the plugin (default: the client's timeline)
 *   PFLAGS=flags           AH_PLUGIN_THREAD_SAFE | AH_PLUGIN_FAIL_CLOSED (default 0)
 *   PNAME="tl"             the plugin's name (default: the library key)
 *   NO_PLUGIN              add no plugin in create
 *   FAIL_AFTER_ADD         create adds its plugin, then fails without removing it
 *
 * The plugin's answer depends on the track event's name: "Drop" drops, "Replace" is replaced by
 * the same event named "Replaced", "Fail" fails, "BadReplace" writes text that is not JSON,
 * "RemoveMe" removes the plugin from inside its own callback, "AddAnother" adds a second plugin
 * (enrichment, "<name>-2") from inside the callback, "Rendezvous" waits up to 2 s for a second
 * call to be inside at the same time, "ResetUser" / "FlushAll" call the client's reset / flush,
 * "PluginCrash" writes through NULL, "PluginHang" never returns (for process mode).
 * Everything else is kept. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "Timeliner"
#endif
#ifndef ROLE
#define ROLE AH_ROLE_WHOLE_SETTINGS
#endif
#ifndef STAGE
#define STAGE AH_PLUGIN_BEFORE
#endif
#ifndef SCOPE
#define SCOPE NULL
#endif
#ifndef PFLAGS
#define PFLAGS 0
#endif
#ifndef PNAME
#define PNAME KEY
#endif

struct ah_instance {
    const ah_host *host;
    const ah_host_timeline *timeline;
    const ah_host_client *client;
    const ah_host_http *http;
};

struct plugin {
    struct ah_instance *owner;
    char name[64];
    uint64_t id;
    int inside;        /* calls in progress (atomic) */
    int max_inside;    /* most calls seen at once (atomic) */
    int calls;         /* process calls (atomic) */
    int released;      /* release calls (atomic) */
    int rendezvous;    /* "Rendezvous" calls that arrived (atomic) */
};

static void logf_(struct ah_instance *self, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(struct ah_instance *self, int level, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    self->host->log(self->host->ctx, level, line, (size_t)n);
}

static int has_event(const char *json, size_t len, const char *name) {
    char needle[96];
    int n = snprintf(needle, sizeof needle, "\"event\":\"%s\"", name);
    if (n <= 0 || (size_t)n > len) return 0;
    for (size_t i = 0; i + (size_t)n <= len; i++) {
        if (memcmp(json + i, needle, (size_t)n) == 0) return 1;
    }
    return 0;
}

static int add_plugin(struct ah_instance *self, const char *name, int32_t type, const char *scope, uint32_t flags,
                      char *err, size_t cap);

static void sleep_ms(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static int32_t process(void *ctx, const char *json, size_t len, const ah_event_output *out, char *err, size_t cap) {
    struct plugin *p = (struct plugin *)ctx;
    int now = __atomic_add_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
    int seen = __atomic_load_n(&p->max_inside, __ATOMIC_SEQ_CST);
    while (now > seen && !__atomic_compare_exchange_n(&p->max_inside, &seen, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    __atomic_add_fetch(&p->calls, 1, __ATOMIC_SEQ_CST);
    int32_t verdict = AH_EVENT_KEEP;

    if (has_event(json, len, "PluginCrash")) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
    if (has_event(json, len, "PluginHang")) {
        for (;;) pause();
    }
    if (has_event(json, len, "Drop")) {
        verdict = AH_EVENT_DROP;
    } else if (has_event(json, len, "Replace")) {
        /* The same event, renamed: "Replace" -> "Replaced". */
        char *copy = (char *)malloc(len + 1);
        const char *at = NULL;
        for (size_t i = 0; i + 17 <= len; i++) if (memcmp(json + i, "\"event\":\"Replace\"", 17) == 0) { at = json + i; break; }
        size_t head = (size_t)(at - json) + 16;
        memcpy(copy, json, head);
        copy[head] = 'd';
        memcpy(copy + head + 1, json + head, len - head);
        ah_status st = out->write(out->ctx, copy, len + 1);
        free(copy);  /* the host copied it before write returned */
        verdict = st == AH_OK ? AH_EVENT_REPLACE : AH_EVENT_ERROR;
        if (st != AH_OK) snprintf(err, cap, "write refused");
    } else if (has_event(json, len, "BadReplace")) {
        ah_status st = out->write(out->ctx, "not json", 8);
        verdict = AH_EVENT_REPLACE;
        logf_(p->owner, AH_LOG_INFO, "bad write status=%d", (int)st);
    } else if (has_event(json, len, "Fail")) {
        snprintf(err, cap, "fixture failure in %s", p->name);
        verdict = AH_EVENT_ERROR;
    } else if (has_event(json, len, "RemoveMe")) {
        ah_status st = p->owner->timeline->remove(p->owner->host->ctx, p->id);
        ah_status again = p->owner->timeline->remove(p->owner->host->ctx, p->id);
        logf_(p->owner, AH_LOG_INFO, "removed %s from its callback: %d, again: %d, released yet: %d", p->name, (int)st,
              (int)again, __atomic_load_n(&p->released, __ATOMIC_SEQ_CST));
    } else if (has_event(json, len, "AddAnother")) {
        char name[80], why[256] = "";
        snprintf(name, sizeof name, "%s-2", p->name);
        int ok = add_plugin(p->owner, name, AH_PLUGIN_ENRICHMENT, NULL, 0, why, sizeof why);
        logf_(p->owner, AH_LOG_INFO, "added %s from a callback: %d %s", name, ok, why);
    } else if (has_event(json, len, "Rendezvous")) {
        int waited = 0;
        __atomic_add_fetch(&p->rendezvous, 1, __ATOMIC_SEQ_CST);
        /* Both calls must be inside at once: each waits until the other arrived, while still in. */
        while (__atomic_load_n(&p->rendezvous, __ATOMIC_SEQ_CST) < 2 && waited < 2000) { sleep_ms(1); waited++; }
        if (waited >= 2000) { snprintf(err, cap, "no other call arrived"); verdict = AH_EVENT_ERROR; }
    } else if (has_event(json, len, "ResetUser")) {
        logf_(p->owner, AH_LOG_INFO, "client reset: %d", (int)p->owner->client->reset(p->owner->host->ctx));
    } else if (has_event(json, len, "FlushAll")) {
        logf_(p->owner, AH_LOG_INFO, "client flush: %d", (int)p->owner->client->flush(p->owner->host->ctx));
    } else if (has_event(json, len, "SendBack")) {
        /* A new event from inside the callback: it comes back through this same plugin later. */
        static const char echo[] = "{\"type\":\"track\",\"event\":\"Echo\",\"properties\":{\"from\":\"plugin\"}}";
        ah_status st = p->owner->host->send_event(p->owner->host->ctx, echo, sizeof echo - 1);
        logf_(p->owner, AH_LOG_INFO, "sent back: %d", (int)st);
    } else if (has_event(json, len, "Echo")) {
        logf_(p->owner, AH_LOG_INFO, "echo came back");
    } else if (has_event(json, len, "Slow")) {
        sleep_ms(2);
    }
    __atomic_sub_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
    return verdict;
}

static void p_update(void *ctx, const char *settings, size_t len, int32_t kind) {
    struct plugin *p = (struct plugin *)ctx;
    logf_(p->owner, AH_LOG_INFO, "plugin %s update kind=%d settings=%.*s", p->name, (int)kind, (int)(len > 600 ? 600 : len), settings);
}
static void p_reset(void *ctx) {
    struct plugin *p = (struct plugin *)ctx;
    logf_(p->owner, AH_LOG_INFO, "plugin %s reset", p->name);
}
static void p_flush(void *ctx) {
    struct plugin *p = (struct plugin *)ctx;
    logf_(p->owner, AH_LOG_INFO, "plugin %s flush", p->name);
}
static void p_release(void *ctx) {
    struct plugin *p = (struct plugin *)ctx;
    int n = __atomic_add_fetch(&p->released, 1, __ATOMIC_SEQ_CST);
    logf_(p->owner, AH_LOG_INFO, "release %s count=%d calls=%d max_concurrency=%d inside=%d", p->name, n,
          __atomic_load_n(&p->calls, __ATOMIC_SEQ_CST), __atomic_load_n(&p->max_inside, __ATOMIC_SEQ_CST),
          __atomic_load_n(&p->inside, __ATOMIC_SEQ_CST));
    /* Freed only at process exit: a test may look at `released` after a second release. */
}

static int add_plugin(struct ah_instance *self, const char *name, int32_t type, const char *scope, uint32_t flags,
                      char *err, size_t cap) {
    struct plugin *p = (struct plugin *)calloc(1, sizeof *p);
    if (!p) return 0;
    p->owner = self;
    snprintf(p->name, sizeof p->name, "%s", name);
    ah_timeline_plugin d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.type = type;
    d.flags = flags;
    d.name = p->name;
    d.destination = scope;
    d.ctx = p;
    d.process = process;
    d.update = p_update;
    d.reset = p_reset;
    d.flush = p_flush;
    d.release = p_release;
    ah_status st = self->timeline->add(self->host->ctx, &d, &p->id, err, cap);
    if (st != AH_OK) { free(p); return 0; }
    return 1;
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) { snprintf(err, cap, "host older than ABI 1.2"); return NULL; }
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    self->timeline = (const ah_host_timeline *)host->get_extension(host->ctx, AH_EXT_TIMELINE);
    self->client = (const ah_host_client *)host->get_extension(host->ctx, AH_EXT_CLIENT);
    self->http = (const ah_host_http *)host->get_extension(host->ctx, AH_EXT_HTTP);
    if (!self->timeline || !self->client || !self->http) {
        snprintf(err, cap, "missing capability: timeline=%d client=%d http=%d", self->timeline != NULL,
                 self->client != NULL, self->http != NULL);
        free(self);
        return NULL;
    }
    logf_(self, AH_LOG_INFO, "create settings=%.*s", (int)(len > 600 ? 600 : len), settings);
    logf_(self, AH_LOG_INFO, "unknown extension: %d", host->get_extension(host->ctx, "analytics-host.nothing/1") != NULL);

    char buf[512];
    int64_t n = self->client->storage_directory(host->ctx, buf, sizeof buf);
    logf_(self, AH_LOG_INFO, "storage=%s (%lld)", buf, (long long)n);
    n = self->client->options(host->ctx, buf, sizeof buf);
    logf_(self, AH_LOG_INFO, "options=%s (%lld)", buf, (long long)n);
    n = self->client->traits(host->ctx, buf, sizeof buf);
    logf_(self, AH_LOG_INFO, "traits=%s (%lld)", buf, (long long)n);
    char tiny[4];
    n = self->client->options(host->ctx, tiny, sizeof tiny);
    logf_(self, AH_LOG_INFO, "options truncated=%s (%lld)", tiny, (long long)n);

#ifndef NO_PLUGIN
    if (!add_plugin(self, PNAME, STAGE, SCOPE, PFLAGS, err, cap)) { free(self); return NULL; }
#endif
#ifdef FAIL_AFTER_ADD
    /* Fails with its plugin still added (and keeps `self`, which the plugin's release uses). */
    snprintf(err, cap, "failing after add");
    return NULL;
#endif
    return self;
}

struct body { char text[256]; size_t len; int stop; };
static ah_status sink_write(void *ctx, const char *bytes, size_t len) {
    struct body *b = (struct body *)ctx;
    if (b->stop) return AH_ERR_PERMANENT;
    size_t room = sizeof b->text - 1 - b->len;
    size_t n = len < room ? len : room;
    memcpy(b->text + b->len, bytes, n);
    b->len += n;
    b->text[b->len] = 0;
    return AH_OK;
}

/* With options {"fetch": "<url>"} (and "stopSink": true), GETs the URL when started. */
static void fetch_if_asked(ah_instance *self) {
    char options[512];
    self->client->options(self->host->ctx, options, sizeof options);
    const char *at = strstr(options, "\"fetch\":\"");
    if (!at) return;
    at += 9;
    const char *end = strchr(at, '"');
    if (!end) return;
    struct body b;
    memset(&b, 0, sizeof b);
    b.stop = strstr(options, "\"stopSink\":true") != NULL;
    ah_byte_sink sink = { &b, sink_write };
    int32_t status = 0;
    char err[256] = "";
    ah_status st = self->http->get(self->host->ctx, at, (size_t)(end - at), 1500, &sink, &status, err, sizeof err);
    logf_(self, AH_LOG_INFO, "http result=%d status=%d body=%s err=%s", (int)st, (int)status, b.text, err);
}

/* Which thread runs an instance hook: "thread <hook> <id>". */
static void log_thread(ah_instance *self, const char *hook) {
    char line[96];
    int n = snprintf(line, sizeof line, "thread %s %lu", hook, (unsigned long)pthread_self());
    if (n > 0) self->host->log(self->host->ctx, AH_LOG_DEBUG, line, (size_t)n);
}

static ah_status update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    (void)err; (void)cap;
    log_thread(self, "update");
    logf_(self, AH_LOG_INFO, "instance update kind=%d settings=%.*s", (int)kind, (int)(len > 600 ? 600 : len), settings);
    return AH_OK;
}
static ah_status reset(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    log_thread(self, "reset");
    logf_(self, AH_LOG_INFO, "instance reset");
    return AH_OK;
}
static ah_status flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    log_thread(self, "flush");
    logf_(self, AH_LOG_INFO, "instance flush");
    return AH_OK;
}
static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    log_thread(self, "lifecycle");
    logf_(self, AH_LOG_INFO, "instance lifecycle %d", (int)phase);
    if (phase == AH_LIFECYCLE_STARTED) fetch_if_asked(self);
    return AH_OK;
}
static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)err; (void)cap;
    logf_(self, AH_LOG_INFO, "destination track %.*s", (int)(len > 600 ? 600 : len), json);
    return AH_OK;
}
static void destroy(ah_instance *self) {
    log_thread(self, "destroy");
    logf_(self, AH_LOG_INFO, "destroy");
    free(self);
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, reset, flush, update, destroy, lifecycle,
};

static const ah_role role = { sizeof(ah_role), ROLE };

static const void *get_extension(const char *id) {
    if (strcmp(id, AH_EXT_ROLE) == 0) return &role;
    return NULL;
}

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.2.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
