/* Fixture: malformed integration descriptions, one per -DVARIANT:
 *   1  key is NULL            2  ah_integration.size too small
 *   3  destroy is NULL        4  the entry function refuses the host with a reason */
#include <stdio.h>
#include <stdlib.h>
#include "analytics_plugin.h"

#ifndef VARIANT
#define VARIANT 1
#endif

struct ah_instance { int unused; };
static __attribute__((unused)) void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    (void)host; (void)s; (void)len; (void)err; (void)cap;
    return (ah_instance *)calloc(1, sizeof(ah_instance));
}

#if VARIANT == 3
static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
#else
static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
#endif

static const ah_integration integration __attribute__((unused)) = {
#if VARIANT == 2
    12,
#else
    sizeof(ah_integration),
#endif
    AH_ABI_VERSION,
#if VARIANT == 1
    NULL,
#else
    "Broken",
#endif
    "1.0.0", NULL, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
#if VARIANT == 4
    snprintf(err, cap, "needs ABI 1.9 or newer, host speaks %u.%u",
             (unsigned)AH_ABI_VERSION_MAJOR(host_abi_version), (unsigned)AH_ABI_VERSION_MINOR(host_abi_version));
    return NULL;
#else
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
#endif
}
