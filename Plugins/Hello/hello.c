/*
 * Hello: the smallest useful analytics-host integration, the one docs/c-abi.md walks through.
 * It counts track calls and, on every flush, logs the count through the host.
 *
 * Settings (under "Hello" in the settings' "integrations"): none are read.
 * Build: gcc -std=c99 -shared -fPIC -O2 -I include -o build/plugins/libhello.so Plugins/Hello/hello.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytics_plugin.h"

struct ah_instance {
    const ah_host *host; /* valid until destroy returns */
    long tracks;
};

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)settings; (void)len;
    ah_instance *self = calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "out of memory"); return NULL; }
    self->host = host;
    return self;
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
    self->tracks++; /* the host never calls one instance from two threads at once */
    return AH_OK;
}

static ah_status flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    char line[64];
    int n = snprintf(line, sizeof line, "hello: %ld track calls so far", self->tracks);
    self->host->log(self->host->ctx, AH_LOG_INFO, line, (size_t)n);
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }

static const ah_hooks hooks = {
    .size = sizeof(ah_hooks), .track = track, .flush = flush, .destroy = destroy,
};

/* It reads no settings: an empty table says so (AH_EXT_SETTINGS_SCHEMA), so a key written under
 * "Hello" is reported as unknown instead of passing silently. */
static const ah_settings_schema settings_schema = {
    .size = sizeof(ah_settings_schema), .setting_size = sizeof(ah_setting), .count = 0, .settings = NULL,
};

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0 ? &settings_schema : NULL;
}

static const ah_integration integration = {
    .size = sizeof(ah_integration), .abi_version = AH_ABI_VERSION,
    .key = "Hello", .version = "1.0.0", .language = AH_LANGUAGE_C,
    .create = create, .hooks = &hooks, .get_extension = get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi, char *err, size_t cap) {
    (void)host_abi; (void)err; (void)cap; /* the host refuses another major itself */
    return &integration;
}
