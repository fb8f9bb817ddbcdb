/* Fixture for second clients (AH_EXT_CLIENTS): a destination that sends every event it gets on
 * through the second client for the write key "secondKey" (a setting, default "second-key"),
 * as analytics-swift-live's `new Analytics(writeKey)` would; the host uploads them to Segment.io
 * under that key. A failure to open the client or to send is the event's (its status, the reason
 * in err). Build with -DKEY='"Name"' to give a copy its own key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"
#include "fixture_support.h"

#ifndef KEY
#define KEY "SecondClient"
#endif

struct ah_instance { const ah_host *host; const ah_host_clients *clients; char write_key[256]; };

static ah_status event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    uint64_t id = 0;
    ah_status status;
    if (!self->clients) { snprintf(err, cap, "this host offers no second clients"); return AH_ERR_PERMANENT; }
    status = self->clients->open(self->host->ctx, self->write_key, strlen(self->write_key), &id, err, cap);
    if (status != AH_OK) return status;
    return self->clients->send_event(self->host->ctx, id, json, len);
}

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self;
    (void)err; (void)cap;
    self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    if (AH_HAS_FIELD(host, ah_host, get_extension))
        self->clients = (const ah_host_clients *)host->get_extension(host->ctx, AH_EXT_CLIENTS);
    setting(settings, len, "\"secondKey\":", self->write_key, sizeof self->write_key);
    if (!self->write_key[0]) snprintf(self->write_key, sizeof self->write_key, "second-key");
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), event, event, event, event, event, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

FIXTURE_ENTRY(integration)
