/* Fixture: a well-formed integration whose hooks do nothing. Used to test loading and to measure
 * the cost of the ABI itself. Build with -DKEY='"Name"' to give each copy its own key. */
#include <stdlib.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "Noop"
#endif

struct ah_instance {
    const ah_host *host;
};

static ah_status noop_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len; (void)err; (void)cap;
    return AH_OK;
}

static ah_status noop_plain(ah_instance *self, char *err, size_t cap) {
    (void)self; (void)err; (void)cap;
    return AH_OK;
}

static ah_status noop_update(ah_instance *self, const char *s, size_t len, int32_t kind, char *err, size_t cap) {
    (void)self; (void)s; (void)len; (void)kind; (void)err; (void)cap;
    return AH_OK;
}

static ah_status noop_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)self; (void)phase; (void)err; (void)cap;
    return AH_OK;
}

static void noop_destroy(ah_instance *self) { free(self); }

static ah_instance *noop_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)settings; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks),
    noop_event, noop_event, noop_event, noop_event, noop_event,
    noop_plain, noop_plain, noop_update, noop_destroy, noop_lifecycle,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, noop_create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
