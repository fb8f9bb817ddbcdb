/* Fixture: a library compiled against ABI 1.1, written out by hand: its ah_integration ends after
 * `hooks` (no `get_extension`, which 1.2 appended), while its ah_hooks has the 1.1 `lifecycle`.
 * Right behind the integration sits a "get_extension" pointer that a host reading past the
 * declared size would pick up: it answers a role that would make the library a non-destination
 * (and so lose its events). It implements `track` and `lifecycle`, each reported through the log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

/* ah_integration exactly as ABI 1.1 defined it. */
struct integration_1_1 {
    uint32_t size;
    uint32_t abi_version;
    const char *key, *version, *language, *toolchain;
    ah_instance *(*create)(const ah_host *, const char *, size_t, char *, size_t);
    const ah_hooks *hooks;
};

struct ah_instance { const ah_host *host; };

static void say(ah_instance *self, const char *text) {
    self->host->log(self->host->ctx, AH_LOG_INFO, text, strlen(text));
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
    say(self, "v1.1 track");
    return AH_OK;
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    say(self, phase == AH_LIFECYCLE_STARTED ? "v1.1 started" : "v1.1 stopping");
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)s; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const ah_hooks hooks = {
    offsetof(ah_hooks, lifecycle) + sizeof(hooks.lifecycle), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, lifecycle,
};

static const ah_role trap_role = { sizeof(ah_role), AH_ROLE_WHOLE_SETTINGS };
static const void *trap_get_extension(const char *id) { (void)id; return &trap_role; }

static const struct {
    struct integration_1_1 integration;
    const void *(*beyond)(const char *);
} table = {
    { sizeof(struct integration_1_1), (1u << 16) | 1u, "MidTimer", "1.1.0", AH_LANGUAGE_C, NULL, create, &hooks },
    trap_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return (const ah_integration *)(const void *)&table.integration;
}
