/* A destination that declares its settings (AH_EXT_SETTINGS_SCHEMA): "apiKey" (string, required),
 * "flushAt" (number, default 20), "region" (string, default "us"), "tags" (array or string).
 * `create` logs "created <settings>" so a test can tell whether the host called it.
 * -DSCHEMA_DUPLICATE, -DSCHEMA_BAD_DEFAULT, -DSCHEMA_NO_TYPE, -DSCHEMA_SHORT_ENTRY and
 * -DSCHEMA_EMPTY_NAME make the table malformed in one way each (the host must refuse the library). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; };

static const ah_setting settings_list[] = {
    { "apiKey", AH_SETTING_STRING, 1, NULL, "the key" },
#if defined(SCHEMA_BAD_DEFAULT)
    { "flushAt", AH_SETTING_NUMBER, 0, "\"twenty\"", "events per upload" },
#elif defined(SCHEMA_NO_TYPE)
    { "flushAt", 0x80u, 0, "20", "events per upload" },
#else
    { "flushAt", AH_SETTING_NUMBER, 0, "20", "events per upload" },
#endif
    { "region", AH_SETTING_STRING, 0, "\"us\"", "the data center" },
#if defined(SCHEMA_DUPLICATE)
    { "apiKey", AH_SETTING_STRING, 0, NULL, "again" },
#elif defined(SCHEMA_EMPTY_NAME)
    { "", AH_SETTING_STRING, 0, NULL, "no name" },
#else
    { "tags", AH_SETTING_ARRAY | AH_SETTING_STRING, 0, NULL, "labels" },
#endif
};

static const ah_settings_schema schema = {
    sizeof(ah_settings_schema),
#if defined(SCHEMA_SHORT_ENTRY)
    8,
#else
    sizeof(ah_setting),
#endif
    sizeof settings_list / sizeof settings_list[0], 0, settings_list,
};

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len; (void)err; (void)cap;
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    char line[512];
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "out of memory"); return NULL; }
    self->host = host;
    snprintf(line, sizeof line, "created %.*s", (int)(len < 400 ? len : 400), settings);
    host->log(host->ctx, AH_LOG_INFO, line, strlen(line));
    return self;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL,
};

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0 ? &schema : NULL;
}

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Schema", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
