/* Fixture: uses every host service. On `track` it reads the userId and anonymousId, then sends an
 * "Echo" track event back into the host's pipeline, and logs what it did. Its own echoes (which
 * come back through the pipeline) are not echoed again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; };

/* The event text is a (pointer, length) view, not a C string: search within the length. */
static int contains(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    const ah_host *host = self->host;
    char user[64], anon[64], event[256], line[128];
    int64_t user_len = host->user_id(host->ctx, user, sizeof user);
    int64_t anon_len = host->anonymous_id(host->ctx, anon, sizeof anon);
    int n;
    ah_status status;
    if (contains(json, len, "\"event\":\"Echo\"")) return AH_OK;
    n = snprintf(event, sizeof event,
                 "{\"type\":\"track\",\"event\":\"Echo\",\"userId\":\"%s\",\"anonymousId\":\"%s\",\"properties\":{\"bytes\":%zu}}",
                 user_len >= 0 ? user : "", anon, len);
    status = host->send_event(host->ctx, event, (size_t)n);
    n = snprintf(line, sizeof line, "echoed user=%s (%lld) anon=%s (%lld) status=%d",
                 user_len >= 0 ? user : "<none>", (long long)user_len, anon, (long long)anon_len, (int)status);
    host->log(host->ctx, AH_LOG_INFO, line, (size_t)n);
    if (status != AH_OK) {
        snprintf(err, cap, "host refused the echo (status %d)", (int)status);
        return status;
    }
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)s; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    host->log(host->ctx, AH_LOG_DEBUG, "echo created", 12);
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Echo", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
