/* Fixture: a destination that takes its events many per call (ABI 1.3, AH_EXT_BATCH) and does
 * nothing with them: the batch hook's counterpart of noop.c, to measure what handing events over
 * in batches costs. Build with -DKEY='"Name"' to give each copy its own key. */
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "NoopBatch"
#endif

struct ah_instance {
    const ah_host *host;
};

/* Every status stays AH_OK. */
static ah_status events(ah_instance *self, const ah_event_ref *list, size_t count, ah_status *statuses, char *err, size_t cap) {
    (void)self; (void)list; (void)count; (void)statuses; (void)err; (void)cap;
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)settings; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const ah_batch batch = { sizeof(ah_batch), 0, events };

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_BATCH) == 0 ? &batch : NULL;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
