/* Fixture: a library compiled against ABI 1.2, unchanged under a 1.3 host. Its ah_integration and
 * ah_hooks have the 1.2 sizes (1.3 grew no core struct), it declares abi_version 1.2 and offers
 * AH_EXT_ROLE (a destination) through get_extension, answering NULL for every other id, so it
 * never sees a 1.3 table. Its `track` answers 3 for an event named "Three": a value 1.2 did not
 * define (1.3's AH_PENDING), which must stay a permanent failure for a library that took no
 * completion token. Log lines: "v1.2 started", "v1.2 track <name>", "v1.2 stopping". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; };

static void say(ah_instance *self, const char *text) {
    self->host->log(self->host->ctx, AH_LOG_INFO, text, strlen(text));
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)len;
    if (strstr(json, "\"event\":\"Three\"") != NULL && (size_t)(strstr(json, "\"event\":\"Three\"") - json) < len) {
        say(self, "v1.2 track Three");
        snprintf(err, cap, "not a 1.2 status");
        return 3;
    }
    say(self, "v1.2 track");
    return AH_OK;
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    say(self, phase == AH_LIFECYCLE_STARTED ? "v1.2 started" : "v1.2 stopping");
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
    sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, lifecycle,
};

static const ah_role role = { sizeof(ah_role), AH_ROLE_DESTINATION };
static const void *get_extension(const char *id) { return strcmp(id, AH_EXT_ROLE) == 0 ? &role : NULL; }

static const ah_integration integration = {
    sizeof(ah_integration), (1u << 16) | 2u, "V12", "1.2.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
