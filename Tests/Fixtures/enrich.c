/* Fixture (benchmark): a library that adds one enrichment plugin to the client's timeline. By
 * default the plugin keeps every event unchanged; with -DREPLACE it replaces each with the same
 * event plus a top-level "enriched": true (written through the host's output). Serialized calls
 * (no AH_PLUGIN_THREAD_SAFE), as most plugins are. */
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "Enricher"
#endif

struct ah_instance { uint64_t id; char *buffer; size_t capacity; };

static int32_t process(void *ctx, const char *json, size_t len, const ah_event_output *out, char *err, size_t cap) {
    (void)err; (void)cap;
#ifdef REPLACE
    static const char extra[] = ",\"enriched\":true}";
    ah_instance *self = (ah_instance *)ctx;
    size_t need = len + sizeof extra;
    if (need > self->capacity) {
        char *grown = (char *)realloc(self->buffer, need);
        if (!grown) return AH_EVENT_ERROR;
        self->buffer = grown;
        self->capacity = need;
    }
    memcpy(self->buffer, json, len - 1);  /* all but the closing brace */
    memcpy(self->buffer + len - 1, extra, sizeof extra - 1);
    return out->write(out->ctx, self->buffer, len - 1 + sizeof extra - 1) == AH_OK ? AH_EVENT_REPLACE : AH_EVENT_ERROR;
#else
    (void)ctx; (void)json; (void)len; (void)out;
    return AH_EVENT_KEEP;
#endif
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    const ah_host_timeline *timeline = (const ah_host_timeline *)host->get_extension(host->ctx, AH_EXT_TIMELINE);
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    ah_timeline_plugin plugin;
    (void)settings; (void)len;
    if (!self || !timeline) { free(self); return NULL; }
    memset(&plugin, 0, sizeof plugin);
    plugin.size = sizeof plugin;
    plugin.type = AH_PLUGIN_ENRICHMENT;
    plugin.name = KEY;
    plugin.ctx = self;
    plugin.process = process;
    if (timeline->add(host->ctx, &plugin, &self->id, err, cap) != AH_OK) { free(self); return NULL; }
    return self;
}

static void destroy(ah_instance *self) { free(self->buffer); free(self); }

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_role role = { sizeof(ah_role), AH_ROLE_WHOLE_SETTINGS };
static const void *get_extension(const char *id) { return strcmp(id, AH_EXT_ROLE) == 0 ? &role : NULL; }
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
