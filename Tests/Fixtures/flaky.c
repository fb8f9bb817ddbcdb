/* Fixture: `track` fails with AH_ERR_RETRYABLE for the first N calls (settings {"failures": N},
 * default 2), then succeeds; `group` always fails permanently; `identify` returns a status the
 * header does not define; `alias` fails without writing a reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { int failures_left; int attempts; };

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len;
    self->attempts++;
    if (self->failures_left > 0) {
        self->failures_left--;
        snprintf(err, cap, "upstream unavailable (attempt %d)", self->attempts);
        return AH_ERR_RETRYABLE;
    }
    return AH_OK;
}
static ah_status group(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len;
    snprintf(err, cap, "group calls are not supported by this destination");
    return AH_ERR_PERMANENT;
}
static ah_status identify(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len;
    snprintf(err, cap, "odd");
    return 42;
}
static ah_status alias(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len; (void)err; (void)cap;
    return AH_ERR_PERMANENT;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    const char *key = "\"failures\":";
    size_t k = strlen(key), i;
    (void)host; (void)err; (void)cap;
    if (!self) return NULL;
    self->failures_left = 2;
    for (i = 0; i + k < len; i++) {
        if (memcmp(settings + i, key, k) == 0) {
            self->failures_left = atoi(settings + i + k);  /* settings text ends in '}' */
            break;
        }
    }
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), identify, track, NULL, group, alias, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Flaky", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
