/* Fixture: `create` refuses settings without an "apiKey" member, with an error text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { int unused; };

static int contains(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)host;
    if (!contains(settings, len, "\"apiKey\"")) {
        snprintf(err, cap, "settings have no \"apiKey\" (got %zu bytes of settings)", len);
        return NULL;
    }
    return (ah_instance *)calloc(1, sizeof(ah_instance));
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "NeedsKey", "1.2.3", NULL, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
