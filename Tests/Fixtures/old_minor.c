/* Fixture: a library compiled against ABI 1.0, written out by hand: its ah_hooks ends after
 * `destroy` (no `lifecycle`). Right behind the table sits a "lifecycle" pointer that a host reading
 * past the declared size would pick up; calling it logs a TRAP line. It implements `track` only
 * and reports each call through the host's log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

typedef ah_status (*event_fn)(ah_instance *, const char *, size_t, char *, size_t);
typedef ah_status (*plain_fn)(ah_instance *, char *, size_t);
typedef ah_status (*update_fn)(ah_instance *, const char *, size_t, int32_t, char *, size_t);
typedef ah_status (*lifecycle_fn)(ah_instance *, int32_t, char *, size_t);

/* ah_hooks exactly as ABI 1.0 defined it. */
struct hooks_1_0 {
    uint32_t size;
    event_fn identify, track, screen, group, alias;
    plain_fn reset, flush;
    update_fn update;
    void (*destroy)(ah_instance *);
};

struct ah_instance { const ah_host *host; };

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    char line[64];
    int n = snprintf(line, sizeof line, "old track %zu bytes", len);
    (void)json; (void)err; (void)cap;
    self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    return AH_OK;
}

static ah_status trap_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)phase; (void)err; (void)cap;
    self->host->log(self->host->ctx, AH_LOG_ERROR, "TRAP: host read past ah_hooks.size", strlen("TRAP: host read past ah_hooks.size"));
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)s; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const struct {
    struct hooks_1_0 hooks;
    lifecycle_fn beyond;
} table = {
    { sizeof(struct hooks_1_0), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy },
    trap_lifecycle,
};

static const ah_integration integration = {
    offsetof(ah_integration, get_extension) /* the 1.0 layout */, (1u << 16) | 0u, "OldTimer", "0.9.0", AH_LANGUAGE_C, NULL, create,
    (const ah_hooks *)(const void *)&table.hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
