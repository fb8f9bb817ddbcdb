/* Fixture: a library compiled against a future minor of ABI 1 whose structs grew at the end.
 * The host must load it, ignore the fields it does not know, and call the ones it does. */
#include <stdlib.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; };

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)err; (void)cap;
    self->host->log(self->host->ctx, AH_LOG_INFO, "newer track", 11);
    return len > 0 ? AH_OK : AH_ERR_PERMANENT;
}
static ah_status future_hook(ah_instance *self) { (void)self; return AH_OK; }
static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)s; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

struct future_hooks {
    ah_hooks current;
    ah_status (*some_future_hook)(ah_instance *);
};
struct future_integration {
    ah_integration current;
    const char *some_future_field;
};

static const struct future_hooks hooks = {
    { sizeof(struct future_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL },
    future_hook,
};

static const struct future_integration integration = {
    { sizeof(struct future_integration), (1u << 16) | (AH_ABI_MINOR + 5u), "Futurist", "3.0.0", AH_LANGUAGE_C,
      NULL, create, &hooks.current, NULL },
    "a field this host does not know",
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration.current;
}
