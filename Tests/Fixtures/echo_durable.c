/* Fixture for the sent-back durability test: on each "Crash Test" track event (properties.index
 * = i) it sends ECHOES events back through ah_host.send_event, each a track "Echo" with
 * properties.echo = i * ECHOES + k, and after every AH_OK answer writes "k <echo>\n" to file
 * descriptor 1 (the test child's stdout, a pipe the test reads): those echoes were accepted by
 * the host, so each must reach the server even if the process is SIGKILLed right after. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"

#define ECHOES 4

struct ah_instance { const ah_host *host; };

/* The event text is a (pointer, length) view, not a C string: search within the length. */
static const char *find(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return text + i;
    return NULL;
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    const ah_host *host = self->host;
    const char *at;
    long index, k;
    char event[160], line[32];
    int n, m;
    (void)err; (void)cap;
    if (find(json, len, "\"event\":\"Echo\"")) return AH_OK;
    at = find(json, len, "\"index\":");
    if (!at) return AH_OK;
    index = strtol(at + 8, NULL, 10);
    for (k = 0; k < ECHOES; k++) {
        long echo = index * ECHOES + k;
        n = snprintf(event, sizeof event, "{\"type\":\"track\",\"event\":\"Echo\",\"properties\":{\"echo\":%ld}}", echo);
        if (host->send_event(host->ctx, event, (size_t)n) != AH_OK) continue;
        m = snprintf(line, sizeof line, "k %ld\n", echo);
        if (write(1, line, (size_t)m) < 0) return AH_OK;
    }
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }
static ah_instance *create(const ah_host *host, const char *s, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)s; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "EchoDurable", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
